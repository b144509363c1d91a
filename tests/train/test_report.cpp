// report.html: every text of the confusion-matrix picture fits inside the picture.
// Text extents are estimated at 0.5 em a character (an average Latin glyph in a sans-serif
// font), so the check is a lower bound: a text this estimate puts outside is surely clipped.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "train/report.h"

namespace {

rc::EvalResult three_class_eval(const std::string& split) {
  rc::EvalResult e;
  e.split = split;
  e.labels = {"negative", "neutral", "positive"};
  e.confusion = {{5, 1, 0}, {2, 7, 1}, {0, 1, 9}};
  e.precision = e.recall = e.f1 = {0.5, 0.5, 0.5};
  e.support = {6, 10, 10};
  return e;
}

// The <svg> element that holds the confusion matrix.
std::string confusion_svg_of(const std::string& html) {
  const size_t title = html.find("Confusion matrix");
  EXPECT_NE(title, std::string::npos);
  const size_t begin = html.rfind("<svg", title), end = html.find("</svg>", title);
  EXPECT_NE(begin, std::string::npos);
  EXPECT_NE(end, std::string::npos);
  return html.substr(begin, end - begin);
}

// The value of attribute `name` in the tag `tag` (single-quoted, as the report writes them).
std::optional<std::string> attribute(const std::string& tag, const std::string& name) {
  const std::string key = " " + name + "='";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return std::nullopt;
  const size_t begin = at + key.size(), end = tag.find('\'', begin);
  return tag.substr(begin, end - begin);
}

void expect_texts_inside(const std::string& svg, int classes) {
  const auto width_attr = attribute(svg.substr(0, svg.find('>')), "width");
  ASSERT_TRUE(width_attr.has_value());
  const double width = std::stod(*width_attr);
  int texts = 0;
  for (size_t at = svg.find("<text "); at != std::string::npos; at = svg.find("<text ", at + 1)) {
    const size_t tag_end = svg.find('>', at), close = svg.find("</text>", tag_end);
    ASSERT_NE(close, std::string::npos);
    const std::string tag = svg.substr(at, tag_end - at), body = svg.substr(tag_end + 1, close - tag_end - 1);
    const double x = std::stod(attribute(tag, "x").value());
    const double size = std::stod(attribute(tag, "font-size").value_or("16"));
    const std::string anchor = attribute(tag, "text-anchor").value_or("start");
    const double w = 0.5 * size * double(body.size());
    const double left = anchor == "middle" ? x - w / 2 : anchor == "end" ? x - w : x;
    EXPECT_GE(left, 0.0) << "clipped on the left: " << body;
    EXPECT_LE(left + w, width) << "clipped on the right: " << body << " (picture width " << width << ")";
    ++texts;
  }
  EXPECT_EQ(texts, 2 + 2 * classes + classes * classes);  // title, axes, column and row labels, cells
}

TEST(Report, ConfusionMatrixTextsFitForThreeClasses) {
  const auto e = three_class_eval("test");
  const auto svg = confusion_svg_of(rc::train::render_report_html(nlohmann::json::object(), &e, "t"));
  expect_texts_inside(svg, 3);
  EXPECT_NE(svg.find("rows: true, columns: predicted"), std::string::npos);
}

TEST(Report, ConfusionMatrixTextsFitForTwoClassesAndALongSplitName) {
  auto e = three_class_eval("validation_matched");
  e.labels = {"no", "yes"};
  e.confusion = {{3, 1}, {0, 4}};
  e.precision = e.recall = e.f1 = {0.5, 0.5};
  e.support = {4, 4};
  expect_texts_inside(confusion_svg_of(rc::train::render_report_html(nlohmann::json::object(), &e, "t")), 2);
}

}  // namespace
