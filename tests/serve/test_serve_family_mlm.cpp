// BertForMaskedLM and DistilBertForMaskedLM folders behind the real server: the backend is chosen
// by any family's *ForMaskedLM architecture, and /invocations answers what rc::FillMasker
// answers (whose candidates tests/model/test_family_fill_mask.cpp checks against PyTorch).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "roberta/fill_mask.h"
#include "serve/serve_fixture.h"

using namespace rc::serve;
using namespace rc::serve::testing;
using nlohmann::json;

namespace {

TEST(ServeFamilyMaskedLm, BertAndDistilBertFillMaskOnInvocations) {
  for (const char* name : {"bert-mlm-fill", "distilbert-mlm-fill"}) {
    const std::filesystem::path dir = std::filesystem::path(RC_TEST_DATA_DIR) / "tiny_families" / name;
    const std::string text = "the man [MASK] the guitar.";
    const std::string want = rc::FillMasker::load(dir)->fill_json({text}, 3, true, 0, {});
    RealModelServer server(dir);
    auto r = call("POST", server.url("/invocations"), json{{"inputs", text}, {"parameters", {{"top_k", 3}}}}.dump());
    ASSERT_EQ(r.status, 200) << name << ": " << r.body;
    EXPECT_EQ(json::parse(r.body), json::parse(want)) << name;
  }
}

}  // namespace
