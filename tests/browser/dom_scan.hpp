#pragma once
// A minimal reader for the DOM Chromium serialises with --dump-dom: the elements with their
// attributes and parents, and the text of an element by id. Enough to find the report's SVG
// marks and their data-* attributes; not a general HTML parser.
#include <map>
#include <string>
#include <vector>

namespace eaglesim::test {

struct DomElement {
  std::string tag;
  std::map<std::string, std::string> attrs;
  int parent = -1;
  std::size_t text_begin = 0, text_end = 0;  // raw content between the tags (end = 0: unknown)

  bool has(const std::string& name) const { return attrs.count(name) > 0; }
  const std::string& attr(const std::string& name) const;  // "" when absent
};

class Dom {
 public:
  explicit Dom(std::string html);
  const std::vector<DomElement>& elements() const { return elements_; }
  // Elements with this tag (any tag if empty) whose attribute `name` equals `value`.
  std::vector<int> find(const std::string& tag, const std::string& name, const std::string& value) const;
  std::vector<int> with_attr(const std::string& tag, const std::string& name) const;
  // Descendants of `root` with this tag.
  std::vector<int> descendants(int root, const std::string& tag) const;
  bool is_inside(int element, int ancestor) const;
  std::string raw_text(int element) const;  // content between the open and close tags
  const DomElement& at(int i) const { return elements_[static_cast<std::size_t>(i)]; }

 private:
  std::string html_;
  std::vector<DomElement> elements_;
};

}  // namespace eaglesim::test
