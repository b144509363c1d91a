// Single-thread encode throughput of rc::Tokenizer on a text file (one text per line, only
// the newline stripped), the same work as bench/tokenizer/hf_tokenizer.mjs does with HF's
// Rust tokenizers. compare.sh runs both, interleaved, and prints the ratio.
//
//   bench_tokenizer --tokenizer assets/tokenizer/roberta-base
//                   --texts data/tweeteval/sentiment/train_text.txt --passes 5 [--offsets]
//
// --offsets times encode_with_offsets (ids with character offsets, what token classification
// uses) instead of encode; HF's encodeBatch computes offsets either way.
//
// Prints one JSON line per timed pass: {"impl":"rc",...,"seconds":s,"texts_per_s":...}.
// Pass 0 runs on a fresh tokenizer (empty word cache, "cold": true); later passes reuse it,
// as a server does. A pass during which this process got < 90% of a core (a busy
// neighbour on a shared machine, ANCHORS.md lesson 5) is marked "busy": true.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "roberta/error.h"
#include "roberta/tokenizer.h"

namespace {

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

int usage() {
  std::fprintf(stderr,
               "usage: bench_tokenizer --tokenizer DIR --texts FILE [--passes N] [--max-length N] [--ids-out FILE] "
               "[--offsets]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, texts_file, ids_out;
  int passes = 5, max_length = 0;
  bool offsets = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--offsets") {
      offsets = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    if (a == "--tokenizer")
      dir = argv[++i];
    else if (a == "--texts")
      texts_file = argv[++i];
    else if (a == "--passes")
      passes = std::atoi(argv[++i]);
    else if (a == "--max-length")
      max_length = std::atoi(argv[++i]);
    else if (a == "--ids-out")  // each text's ids, one line of them per text (check_ids.sh)
      ids_out = argv[++i];
    else
      return usage();
  }
  if (dir.empty() || texts_file.empty() || passes < 1) return usage();
  try {
    std::ifstream in(texts_file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "bench_tokenizer: cannot open %s\n", texts_file.c_str());
      return 1;
    }
    std::vector<std::string> texts;
    size_t bytes = 0;
    for (std::string line; std::getline(in, line);) {
      bytes += line.size();
      texts.push_back(std::move(line));
    }
    auto tok = rc::Tokenizer::from_dir(dir);
    if (!ids_out.empty()) {
      std::ofstream out(ids_out, std::ios::binary);
      for (const std::string& t : texts) {
        std::string line;
        for (int32_t id : tok->encode(t, true, max_length)) line += (line.empty() ? "" : " ") + std::to_string(id);
        out << line << '\n';
      }
      return out.good() ? 0 : 1;
    }
    for (int p = 0; p < passes; ++p) {
      const double c0 = cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      size_t tokens = 0;
      if (offsets)
        for (const std::string& t : texts) tokens += tok->encode_with_offsets(t, max_length).ids.size();
      else
        for (const std::string& t : texts) tokens += tok->encode(t, true, max_length).size();
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = cpu_seconds() - c0;
      std::printf(
          "{\"impl\":\"rc\",\"offsets\":%s,\"pass\":%d,\"cold\":%s,\"busy\":%s,\"texts\":%zu,\"bytes\":%zu,"
          "\"tokens\":%zu,\"seconds\":%.6f,\"cpu_seconds\":%.6f,\"texts_per_s\":%.1f,"
          "\"tokens_per_s\":%.1f,\"mb_per_s\":%.3f}\n",
          offsets ? "true" : "false", p, p == 0 ? "true" : "false", cpu < 0.9 * wall ? "true" : "false", texts.size(),
          bytes, tokens, wall, cpu, double(texts.size()) / wall, double(tokens) / wall, double(bytes) / wall / 1e6);
      std::fflush(stdout);
    }
  } catch (const rc::Error& e) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "HINT: %s\n", e.hint().c_str());
    return 1;
  }
  return 0;
}
