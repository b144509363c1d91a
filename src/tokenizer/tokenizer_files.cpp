// Parsing tokenizer.json / vocab.json + merges.txt (+ configs) into a TokenizerSpec.
#include "tokenizer/tokenizer_files.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/json_depth.h"
#include "core/regular_file.h"
#include "tokenizer/byte_level.h"

namespace rc::tokenizer {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFileHint =
    "\nHINT: point at a Hugging Face tokenizer folder (tokenizer.json, or vocab.json + "
    "merges.txt), e.g. assets/tokenizer/roberta-base";

std::string read_file(const fs::path& file, uint64_t max_bytes) {
  // A symlink loop counts as present: the open below says so (io).
  RC_CHECK(path_present(file), Errc::not_found, "tokenizer file '", file.string(), "' does not exist", kFileHint);
  return read_regular_file(file, max_bytes, "tokenizer file",
                           "real tokenizer files are at most ~17 MB (multilingual tokenizer.json); is it corrupt "
                           "or padded?");
}

json parse_json(const fs::path& file, uint64_t max_bytes, const json::parser_callback_t& callback = nullptr) {
  const std::string text = read_file(file, max_bytes);
  check_json_depth(text, "tokenizer file '" + file.string() + "'");
  try {
    return json::parse(text, callback);
  } catch (const json::exception& e) {
    RC_THROW(Errc::format, "tokenizer file '", file.string(), "' is not valid JSON: ", e.what(),
             "\nHINT: the file is truncated or corrupt; download it again from the model repository");
  }
}

// `file` parsed, with the vocab object {"token": id, ...} at `path` (keys from the root; empty:
// the root itself) read into `vocab` as the parser meets each entry instead of into the DOM,
// where it is left an empty object. Why: a DOM object is a std::map node per token (50,265
// for RoBERTa), then copied here; that was ~30% of loading the tokenizer. The same checks as
// before: each id a non-negative int32; a repeated key (or a repeated object on the path)
// keeps the last, as the DOM did. `where` names the object in errors.
json parse_json_reading_vocab(const fs::path& file, std::vector<std::string> path,
                              std::unordered_map<std::string, int32_t>& vocab, const char* where) {
  vocab.clear();
  vocab.reserve(1 << 16);
  std::vector<std::string> keys;  // keys[i]: the key whose value is being read at depth i + 1
  bool in_entry = false;          // the next value is a vocab entry's id
  const size_t entry_depth = path.size() + 1;
  auto on_path = [&](size_t n) {  // the first n keys are the path's
    for (size_t i = 0; i < n; ++i)
      if (keys[i] != path[i]) return false;
    return true;
  };
  return parse_json(file, kMaxTokenizerFileBytes, [&](int depth, json::parse_event_t event, json& parsed) {
    using Event = json::parse_event_t;
    const size_t d = size_t(depth);
    if (event == Event::key) {
      keys.resize(d);
      keys[d - 1] = parsed.get<std::string>();
      if (d < entry_depth && d == path.size() && on_path(d)) vocab.clear();  // the object again: the last wins
      in_entry = d == entry_depth && on_path(path.size());
      return !in_entry;  // an entry's key (and so its value) stays out of the DOM
    }
    if (in_entry && d == entry_depth) {
      in_entry = false;
      const bool id_ok = event == Event::value && parsed.is_number_integer() && parsed.get<int64_t>() >= 0 &&
                         parsed.get<int64_t>() < INT32_MAX;
      RC_CHECK(id_ok, Errc::format, "tokenizer file '", file.string(), "': ", where, " entry '", keys[d - 1],
               "' must map to a non-negative integer id, found ",
               event == Event::value          ? parsed.dump()
               : event == Event::object_start ? "an object"
                                              : "an array",
               kFileHint);
      vocab.insert_or_assign(std::move(keys[d - 1]), int32_t(parsed.get<int64_t>()));
      return false;
    }
    return true;
  });
}

// The vocab object read by parse_json_reading_vocab, once `v` (its place in the DOM) is known
// to be an object.
std::unordered_map<std::string, int32_t> take_vocab(const json& v, std::unordered_map<std::string, int32_t>& read,
                                                    const fs::path& file, const char* where) {
  RC_CHECK(v.is_object(), Errc::format, "tokenizer file '", file.string(), "': ", where,
           " must be a JSON object {\"token\": id}, found ", v.type_name(), kFileHint);
  return std::move(read);
}

// One "a b" merge line; false when it is not exactly two tokens separated by one space.
bool split_merge(std::string_view line, std::pair<std::string, std::string>& out) {
  const size_t sp = line.find(' ');
  if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size()) return false;
  if (line.find(' ', sp + 1) != std::string_view::npos) return false;
  out = {std::string(line.substr(0, sp)), std::string(line.substr(sp + 1))};
  return true;
}

bool get_bool(const json& obj, const char* key, bool fallback) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

AddedToken parse_added_token(const json& t, const fs::path& file) {
  RC_CHECK(t.is_object() && t.contains("content") && t["content"].is_string(), Errc::format, "tokenizer file '",
           file.string(),
           "': an added token must be an object with a "
           "string \"content\", found ",
           t.dump().substr(0, 200), kFileHint);
  AddedToken a;
  a.content = t["content"].get<std::string>();
  if (auto it = t.find("id"); it != t.end()) {
    RC_CHECK(it->is_number_integer() && it->get<int64_t>() >= 0 && it->get<int64_t>() < INT32_MAX, Errc::format,
             "tokenizer file '", file.string(), "': added token '", a.content, "' has a bad id ", it->dump(),
             kFileHint);
    a.id = int32_t(it->get<int64_t>());
  }
  a.special = get_bool(t, "special", false);
  a.lstrip = get_bool(t, "lstrip", false);
  a.rstrip = get_bool(t, "rstrip", false);
  a.single_word = get_bool(t, "single_word", false);
  a.normalized = get_bool(t, "normalized", !a.special);
  return a;
}

// Ids index a table (one entry per id up to the largest), so they must be dense, as every
// real vocabulary is (0..n-1, added tokens right after). Without this a 30-byte vocab.json
// {"a": 2000000000} asked for a 144 GB table (found by fuzz_vocab_merges).
void check_ids_dense(int64_t max_id, size_t tokens, const fs::path& file) {
  const int64_t bound = 2 * int64_t(tokens) + 1024;
  RC_CHECK(max_id < bound, Errc::format, "tokenizer file '", file.string(), "': token id ", max_id, " is far past the ",
           tokens, " tokens it defines (ids must be dense, below ", bound, ")",
           "\nHINT: the file is corrupt; real vocabularies number their tokens 0, 1, 2, ...");
}

void unsupported(const fs::path& file, const std::string& what) {
  RC_THROW(Errc::unsupported, "tokenizer file '", file.string(), "': ", what,
           " is not supported (only byte-level BPE as GPT-2/RoBERTa use it)",
           "\nHINT: this tokenizer is for RoBERTa-family models; other tokenizers need another "
           "implementation");
}

void read_pre_tokenizer(const json& p, const fs::path& file, TokenizerSpec& spec) {
  RC_CHECK(p.is_object(), Errc::format, "tokenizer file '", file.string(), "': pre_tokenizer must be an object, found ",
           p.type_name(), kFileHint);
  const std::string type = p.value("type", "");
  if (type == "Sequence") {
    const json& list = p.value("pretokenizers", json::array());
    if (list.size() != 1) unsupported(file, "a pre_tokenizer Sequence of " + std::to_string(list.size()) + " steps");
    read_pre_tokenizer(list[0], file, spec);
    return;
  }
  if (type != "ByteLevel") unsupported(file, "pre_tokenizer '" + type + "'");
  if (!get_bool(p, "use_regex", true)) unsupported(file, "ByteLevel with use_regex=false");
  spec.add_prefix_space = get_bool(p, "add_prefix_space", false);
}

int32_t special_id(const json& pair, const fs::path& file, const char* what) {
  // ["<s>", 0]
  RC_CHECK(pair.is_array() && pair.size() == 2 && pair[0].is_string() && pair[1].is_number_integer(), Errc::format,
           "tokenizer file '", file.string(), "': post_processor.", what, " must be [token, id], found ", pair.dump(),
           kFileHint);
  return int32_t(pair[1].get<int64_t>());
}

void read_post_processor(const json& p, const fs::path& file, TokenizerSpec& spec) {
  if (p.is_null()) return;
  RC_CHECK(p.is_object(), Errc::format, "tokenizer file '", file.string(),
           "': post_processor must be an object or null, found ", p.type_name(), kFileHint);
  const std::string type = p.value("type", "");
  // BertProcessing gives the second text type 1, as may a template: the pipeline gives type ids.
  if (type == "BertProcessing") unsupported(file, "post_processor 'BertProcessing' (token type ids)");
  if (type == "TemplateProcessing")
    for (const char* key : {"single", "pair"})
      for (const json& piece : p.value(key, json::array()))
        for (const auto& [kind, body] : piece.items())
          if (body.is_object() && body.value("type_id", 0) != 0)
            unsupported(file, "a TemplateProcessing with type_id " + std::to_string(body.value("type_id", 0)));
  if (type == "RobertaProcessing" || type == "TemplateProcessing") spec.pair_second_type = 0;
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    spec.prefix_ids = {special_id(p.value("cls", json()), file, "cls")};
    spec.suffix_ids = {special_id(p.value("sep", json()), file, "sep")};
    // tokenizers' RobertaProcessing: <s> A </s> </s> B </s>; BertProcessing: one [SEP] between.
    spec.pair_prefix_ids = spec.prefix_ids;
    spec.pair_middle_ids = spec.suffix_ids;
    if (type == "RobertaProcessing") spec.pair_middle_ids.push_back(spec.suffix_ids[0]);
    spec.pair_suffix_ids = spec.suffix_ids;
    spec.bos = p["cls"][0].get<std::string>();
    spec.eos = p["sep"][0].get<std::string>();
    if (type == "RobertaProcessing") {  // tokenizers' RobertaProcessing::default(): both true
      spec.trim_offsets = get_bool(p, "trim_offsets", true);
      spec.trim_add_prefix_space = get_bool(p, "add_prefix_space", true);
    }
  } else if (type == "TemplateProcessing") {
    // single: [{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}, ...]
    const json& single = p.value("single", json::array());
    const json& specials = p.value("special_tokens", json::object());
    bool seen_sequence = false;
    for (const json& piece : single) {
      if (piece.contains("Sequence")) {
        seen_sequence = true;
        continue;
      }
      const std::string name = piece.value("SpecialToken", json::object()).value("id", "");
      RC_CHECK(specials.contains(name) && specials[name].contains("ids"), Errc::format, "tokenizer file '",
               file.string(), "': TemplateProcessing names special token '", name,
               "' that special_tokens does not define", kFileHint);
      auto& target = seen_sequence ? spec.suffix_ids : spec.prefix_ids;
      for (const json& id : specials[name]["ids"]) target.push_back(id.get<int32_t>());
      (seen_sequence ? spec.eos : spec.bos) = name;
    }
    // pair: [..., {"Sequence": {"id": "A"}}, ..., {"Sequence": {"id": "B"}}, ...]
    int sequences = 0;
    for (const json& piece : p.value("pair", json::array())) {
      if (piece.contains("Sequence")) {
        ++sequences;
        continue;
      }
      const std::string name = piece.value("SpecialToken", json::object()).value("id", "");
      RC_CHECK(specials.contains(name) && specials[name].contains("ids"), Errc::format, "tokenizer file '",
               file.string(), "': TemplateProcessing names special token '", name,
               "' that special_tokens does not define", kFileHint);
      auto& target = sequences == 0   ? spec.pair_prefix_ids
                     : sequences == 1 ? spec.pair_middle_ids
                                      : spec.pair_suffix_ids;
      for (const json& id : specials[name]["ids"]) target.push_back(id.get<int32_t>());
    }
  } else if (type == "Sequence") {
    for (const json& q : p.value("processors", json::array())) read_post_processor(q, file, spec);
  } else if (type == "ByteLevel") {  // tokenizers' ByteLevel::default(): both true
    spec.trim_offsets = get_bool(p, "trim_offsets", true);
    spec.trim_add_prefix_space = get_bool(p, "add_prefix_space", true);
  } else {
    unsupported(file, "post_processor '" + type + "'");
  }
}

}  // namespace

TokenizerSpec read_tokenizer_json(const fs::path& file) {
  std::unordered_map<std::string, int32_t> vocab;
  const json j = parse_json_reading_vocab(file, {"model", "vocab"}, vocab, "model.vocab");
  TokenizerSpec spec;
  try {
    RC_CHECK(j.is_object() && j.contains("model") && j["model"].is_object(), Errc::format, "tokenizer file '",
             file.string(), "' has no \"model\" object", kFileHint);
    const json& model = j["model"];
    if (const std::string type = model.value("type", "BPE"); type != "BPE")
      unsupported(file, "model type '" + type + "'");
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
      if (auto it = model.find(key); it != model.end() && it->is_string() && !it->get<std::string>().empty())
        unsupported(file, std::string("BPE with a ") + key);
    if (auto it = model.find("dropout"); it != model.end() && it->is_number() && it->get<double>() > 0)
      unsupported(file, "BPE dropout");
    if (get_bool(model, "ignore_merges", false)) unsupported(file, "BPE with ignore_merges=true");
    RC_CHECK(model.contains("vocab"), Errc::format, "tokenizer file '", file.string(), "': model has no \"vocab\"",
             kFileHint);
    spec.vocab = take_vocab(model["vocab"], vocab, file, "model.vocab");
    const json& merges = model.value("merges", json::array());
    RC_CHECK(merges.is_array(), Errc::format, "tokenizer file '", file.string(),
             "': model.merges must be an array, found ", merges.type_name(), kFileHint);
    spec.merges.reserve(merges.size());
    spec.merge_lines.reserve(merges.size());
    for (size_t i = 0; i < merges.size(); ++i) {
      const json& m = merges[i];
      std::pair<std::string, std::string> pair;
      bool ok = false;
      if (m.is_string()) {
        ok = split_merge(m.get_ref<const std::string&>(), pair);
      } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
        pair = {m[0].get<std::string>(), m[1].get<std::string>()};
        ok = true;
      }
      RC_CHECK(ok, Errc::format, "tokenizer file '", file.string(), "': model.merges[", i,
               "] must be \"a b\" or [\"a\", \"b\"], found ", m.dump().substr(0, 200), kFileHint);
      spec.merges.push_back(std::move(pair));
      spec.merge_lines.push_back(int(i));
    }
    spec.merges_source = file.string() + " (model.merges)";
    if (auto it = model.find("unk_token"); it != model.end() && it->is_string()) spec.unk = it->get<std::string>();

    if (auto it = j.find("normalizer"); it != j.end() && !it->is_null())
      unsupported(file, "normalizer '" + it->value("type", std::string("?")) + "'");
    if (auto it = j.find("pre_tokenizer"); it != j.end() && !it->is_null())
      read_pre_tokenizer(*it, file, spec);
    else
      unsupported(file, "a BPE model without the ByteLevel pre_tokenizer");
    spec.pair_second_type = 1;  // until a RobertaProcessing or TemplateProcessing says otherwise
    if (auto it = j.find("post_processor"); it != j.end()) read_post_processor(*it, file, spec);

    if (auto it = j.find("added_tokens"); it != j.end() && !it->is_null()) {
      RC_CHECK(it->is_array(), Errc::format, "tokenizer file '", file.string(),
               "': added_tokens must be an array, found ", it->type_name(), kFileHint);
      for (const json& t : *it) {
        AddedToken a = parse_added_token(t, file);
        RC_CHECK(a.id >= 0, Errc::format, "tokenizer file '", file.string(), "': added token '", a.content,
                 "' has no id", kFileHint);
        spec.added.push_back(std::move(a));
      }
    }
    if (auto it = j.find("padding"); it != j.end() && it->is_object()) {
      if (auto id = it->find("pad_id"); id != it->end() && id->is_number_integer()) spec.pad_id = id->get<int32_t>();
      spec.pad = it->value("pad_token", "");
    }
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    RC_THROW(Errc::format, "tokenizer file '", file.string(), "' has an unexpected layout: ", e.what(), kFileHint);
  }
  int64_t max_id = -1;
  for (const auto& [t, id] : spec.vocab) max_id = std::max<int64_t>(max_id, id);
  for (const AddedToken& a : spec.added) max_id = std::max<int64_t>(max_id, a.id);
  check_ids_dense(max_id, spec.vocab.size() + spec.added.size(), file);
  // A vocabulary without some of the 256 byte symbols (HF's BPE trainer without the
  // ByteLevel alphabet) goes to the pipeline, which follows tokenizers/src/models/bpe/model.rs
  // merge_word: a byte it lacks is unk or dropped, and the offsets of the word's later tokens
  // count only the symbols kept (word.rs Word::add), which this path's offsets do not.
  for (int b = 0; b < 256; ++b)
    if (!spec.vocab.contains(byte_to_token_string(uint8_t(b))))
      unsupported(file, "a byte-level vocabulary without the byte symbol '" + byte_to_token_string(uint8_t(b)) + "'");
  if (spec.pad.empty()) spec.pad = "<pad>";
  if (spec.unk.empty()) spec.unk = "<unk>";
  if (spec.bos.empty()) spec.bos = "<s>";
  if (spec.eos.empty()) spec.eos = "</s>";
  spec.mask = "<mask>";
  return spec;
}

namespace {

struct RoleToken {
  std::string content;
  std::optional<AddedToken> flags;  // from an object form
};

// "<s>" or {"content": "<s>", "lstrip": ...} (also transformers' {"__type": "AddedToken", ...}).
std::optional<RoleToken> role_token(const json& v, const fs::path& file) {
  if (v.is_string()) return RoleToken{v.get<std::string>(), std::nullopt};
  if (v.is_object() && v.contains("content")) {
    AddedToken a = parse_added_token(v, file);
    a.special = true;
    return RoleToken{a.content, a};
  }
  return std::nullopt;
}

}  // namespace

TokenizerSpec read_vocab_merges(const fs::path& vocab_json, const fs::path& merges_txt, const fs::path& config_dir) {
  TokenizerSpec spec;
  std::unordered_map<std::string, int32_t> vocab;
  spec.vocab = take_vocab(parse_json_reading_vocab(vocab_json, {}, vocab, "the vocabulary"), vocab, vocab_json,
                          "the vocabulary");

  const std::string text = read_file(merges_txt, kMaxTokenizerFileBytes);
  spec.merges_source = merges_txt.string();
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.starts_with("#version")) continue;
    std::pair<std::string, std::string> pair;
    RC_CHECK(split_merge(line, pair), Errc::format, "merges file '", merges_txt.string(), "' line ", line_no,
             ": expected two tokens separated by one space, found '", std::string(line.substr(0, 200)), "'", kFileHint);
    spec.merges.push_back(std::move(pair));
    spec.merge_lines.push_back(line_no);
  }

  // Roles: RoBERTa's defaults, then tokenizer_config.json, then special_tokens_map.json
  // (transformers lets the map override the config).
  std::vector<std::pair<std::string, RoleToken>> roles = {{"bos_token", {"<s>", {}}},    {"eos_token", {"</s>", {}}},
                                                          {"unk_token", {"<unk>", {}}},  {"sep_token", {"</s>", {}}},
                                                          {"cls_token", {"<s>", {}}},    {"pad_token", {"<pad>", {}}},
                                                          {"mask_token", {"<mask>", {}}}};
  std::vector<AddedToken> declared;  // added_tokens_decoder + additional_special_tokens
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
    if (config_dir.empty()) break;
    const fs::path file = config_dir / name;
    std::error_code ec;
    if (!fs::is_regular_file(file, ec)) continue;
    const json j = parse_json(file, kMaxSmallJsonFileBytes);
    if (!j.is_object()) continue;
    try {
      for (auto& [role, token] : roles)
        if (auto it = j.find(role); it != j.end())
          if (auto t = role_token(*it, file)) token = *t;
      if (auto it = j.find("added_tokens_decoder"); it != j.end() && it->is_object()) {
        for (const auto& [id, t] : it->items()) {
          AddedToken a = parse_added_token(t, file);
          // The key is the id in decimal, as transformers writes it: all digits, in int32.
          // (std::stoi took "12abc" as 12 and " 7" as 7.)
          int32_t value = -1;
          const auto [end, err] = std::from_chars(id.data(), id.data() + id.size(), value);
          RC_CHECK(!id.empty() && err == std::errc() && end == id.data() + id.size() && id[0] != '-', Errc::format,
                   "tokenizer file '", file.string(), "': added_tokens_decoder key '", id,
                   "' is not a token id (decimal digits below 2^31)", kFileHint);
          a.id = value;
          declared.push_back(std::move(a));
        }
      }
      if (auto it = j.find("additional_special_tokens"); it != j.end() && it->is_array())
        for (const json& t : *it)
          if (auto r = role_token(t, file)) {
            AddedToken a = r->flags.value_or(AddedToken{});
            a.content = r->content;
            a.special = true;
            declared.push_back(std::move(a));
          }
      spec.add_prefix_space = get_bool(j, "add_prefix_space", spec.add_prefix_space);
    } catch (const rc::Error&) {
      throw;  // already names the file and the problem
    } catch (const std::exception& e) {
      RC_THROW(Errc::format, "tokenizer file '", file.string(), "' has an unexpected layout: ", e.what(), kFileHint);
    }
  }
  int32_t next_id = 0;
  for (const auto& [t, id] : spec.vocab) next_id = std::max(next_id, id + 1);
  check_ids_dense(next_id - 1, spec.vocab.size(), vocab_json);
  for (const AddedToken& a : declared) {
    check_ids_dense(a.id, spec.vocab.size() + declared.size(), config_dir / "tokenizer_config.json");
    next_id = std::max(next_id, a.id + 1);
  }
  auto add = [&](AddedToken a) {
    for (const AddedToken& b : spec.added)
      if (b.content == a.content) return;
    if (a.id < 0) {
      auto it = spec.vocab.find(a.content);
      a.id = it != spec.vocab.end() ? it->second : next_id++;
    }
    spec.added.push_back(std::move(a));
  };
  for (AddedToken& a : declared) add(a);
  for (const auto& [role, token] : roles) {
    AddedToken a;
    if (token.flags) a = *token.flags;
    a.content = token.content;
    a.special = true;
    // transformers' RobertaTokenizer turns a plain-string mask token into
    // AddedToken(lstrip=True): "a <mask>" keeps the space with the mask.
    if (role == "mask_token" && !token.flags) a.lstrip = true;
    a.normalized = false;
    add(a);
  }
  auto content_of = [&](const char* role) {
    for (const auto& [r, t] : roles)
      if (r == role) return t.content;
    return std::string();
  };
  auto id_of = [&](const std::string& content) {
    for (const AddedToken& a : spec.added)
      if (a.content == content) return a.id;
    return int32_t(-1);
  };
  spec.bos = content_of("bos_token");
  spec.eos = content_of("eos_token");
  spec.unk = content_of("unk_token");
  spec.pad = content_of("pad_token");
  spec.mask = content_of("mask_token");
  spec.prefix_ids = {id_of(content_of("cls_token"))};
  spec.suffix_ids = {id_of(content_of("sep_token"))};
  // transformers' RobertaTokenizer.build_inputs_with_special_tokens: <s> A </s></s> B </s>.
  spec.pair_prefix_ids = spec.prefix_ids;
  spec.pair_middle_ids = {spec.suffix_ids[0], spec.suffix_ids[0]};
  spec.pair_suffix_ids = spec.suffix_ids;
  // transformers' RobertaConverter: RobertaProcessing(add_prefix_space=add_prefix_space,
  // trim_offsets=trim_offsets), RobertaTokenizerFast's trim_offsets defaulting to True.
  spec.trim_offsets = true;
  spec.trim_add_prefix_space = spec.add_prefix_space;
  return spec;
}

std::array<int32_t, 256> byte_ids_of(const std::unordered_map<std::string, int32_t>& vocab) {
  std::array<int32_t, 256> ids{};
  for (int b = 0; b < 256; ++b) {
    auto it = vocab.find(byte_to_token_string(uint8_t(b)));
    ids[size_t(b)] = it != vocab.end() ? it->second : -1;
  }
  return ids;
}

std::vector<MergeRule> resolve_merges(const TokenizerSpec& spec) {
  std::vector<MergeRule> rules;
  rules.reserve(spec.merges.size());
  for (size_t i = 0; i < spec.merges.size(); ++i) {
    const auto& [a, b] = spec.merges[i];
    auto find = [&](const std::string& token) {
      auto it = spec.vocab.find(token);
      RC_CHECK(it != spec.vocab.end(), Errc::format, "merges in '", spec.merges_source, "' ",
               spec.merges_source.ends_with("(model.merges)") ? "index " : "line ", spec.merge_lines[i], ": merge '", a,
               " ", b, "' needs token '", token, "', which is not in the vocabulary",
               "\nHINT: the vocabulary and the merges come from different tokenizers; use the "
               "vocab.json and merges.txt of the same model");
      return it->second;
    };
    rules.push_back(MergeRule{find(a), find(b), find(a + b)});
  }
  return rules;
}

}  // namespace rc::tokenizer
