#include "dom_scan.hpp"

#include <cctype>
#include <set>

namespace eaglesim::test {

namespace {

std::string decode_entities(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '&') {
      static const std::pair<const char*, char> table[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'},
                                                           {"&quot;", '"'}, {"&#39;", '\''}, {"&nbsp;", ' '}};
      bool done = false;
      for (const auto& [name, c] : table) {
        const std::string n(name);
        if (s.compare(i, n.size(), n) == 0) {
          out += c;
          i += n.size() - 1;
          done = true;
          break;
        }
      }
      if (done) continue;
    }
    out += s[i];
  }
  return out;
}

bool raw_text_element(const std::string& tag) { return tag == "script" || tag == "style"; }

}  // namespace

const std::string& DomElement::attr(const std::string& name) const {
  static const std::string empty;
  auto it = attrs.find(name);
  return it == attrs.end() ? empty : it->second;
}

Dom::Dom(std::string html) : html_(std::move(html)) {
  static const std::set<std::string> kVoid = {"area", "base", "br", "col", "embed", "hr", "img", "input",
                                              "link", "meta", "source", "track", "wbr"};
  std::vector<int> stack;
  std::size_t i = 0;
  const std::string& h = html_;
  while ((i = h.find('<', i)) != std::string::npos) {
    if (h.compare(i, 4, "<!--") == 0) {
      i = h.find("-->", i);
      if (i == std::string::npos) break;
      continue;
    }
    if (h.compare(i, 2, "<!") == 0) {  // doctype
      i = h.find('>', i);
      continue;
    }
    if (h.compare(i, 2, "</") == 0) {
      const std::size_t end = h.find('>', i);
      std::string tag = h.substr(i + 2, end - i - 2);
      for (auto& c : tag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      // Pop up to and including the matching open element.
      for (int k = static_cast<int>(stack.size()) - 1; k >= 0; --k) {
        if (elements_[static_cast<std::size_t>(stack[static_cast<std::size_t>(k)])].tag == tag) {
          elements_[static_cast<std::size_t>(stack[static_cast<std::size_t>(k)])].text_end = i;
          stack.resize(static_cast<std::size_t>(k));
          break;
        }
      }
      i = end + 1;
      continue;
    }
    // Open tag: name, then attributes name="value" (or bare names), until '>' outside quotes.
    std::size_t p = i + 1;
    DomElement e;
    while (p < h.size() && !std::isspace(static_cast<unsigned char>(h[p])) && h[p] != '>' && h[p] != '/')
      e.tag += static_cast<char>(std::tolower(static_cast<unsigned char>(h[p++])));
    bool self_closing = false;
    while (p < h.size() && h[p] != '>') {
      if (std::isspace(static_cast<unsigned char>(h[p]))) { ++p; continue; }
      if (h[p] == '/') { self_closing = true; ++p; continue; }
      std::string name;
      while (p < h.size() && !std::isspace(static_cast<unsigned char>(h[p])) && h[p] != '=' && h[p] != '>' && h[p] != '/')
        name += h[p++];
      std::string value;
      if (p < h.size() && h[p] == '=') {
        ++p;
        if (h[p] == '"' || h[p] == '\'') {
          const char q = h[p++];
          const std::size_t close = h.find(q, p);
          value = h.substr(p, close - p);
          p = close + 1;
        } else {
          while (p < h.size() && !std::isspace(static_cast<unsigned char>(h[p])) && h[p] != '>') value += h[p++];
        }
      }
      e.attrs[name] = decode_entities(value);
    }
    e.parent = stack.empty() ? -1 : stack.back();
    e.text_begin = p + 1;
    const int id = static_cast<int>(elements_.size());
    const std::string tag = e.tag;
    elements_.push_back(std::move(e));
    i = p + 1;
    if (raw_text_element(tag)) {
      const std::size_t close = h.find("</" + tag, i);
      elements_.back().text_end = close;
      i = h.find('>', close) + 1;
      continue;
    }
    if (!self_closing && !kVoid.count(tag)) stack.push_back(id);
  }
}

std::vector<int> Dom::find(const std::string& tag, const std::string& name, const std::string& value) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < elements_.size(); ++i)
    if ((tag.empty() || elements_[i].tag == tag) && elements_[i].has(name) && elements_[i].attr(name) == value)
      out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> Dom::with_attr(const std::string& tag, const std::string& name) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < elements_.size(); ++i)
    if ((tag.empty() || elements_[i].tag == tag) && elements_[i].has(name)) out.push_back(static_cast<int>(i));
  return out;
}

bool Dom::is_inside(int element, int ancestor) const {
  for (int p = elements_[static_cast<std::size_t>(element)].parent; p >= 0; p = elements_[static_cast<std::size_t>(p)].parent)
    if (p == ancestor) return true;
  return false;
}

std::vector<int> Dom::descendants(int root, const std::string& tag) const {
  std::vector<int> out;
  for (std::size_t i = static_cast<std::size_t>(root) + 1; i < elements_.size(); ++i)
    if ((tag.empty() || elements_[i].tag == tag) && is_inside(static_cast<int>(i), root)) out.push_back(static_cast<int>(i));
  return out;
}

std::string Dom::raw_text(int element) const {
  const DomElement& e = elements_[static_cast<std::size_t>(element)];
  if (e.text_end <= e.text_begin) return "";
  return html_.substr(e.text_begin, e.text_end - e.text_begin);
}

}  // namespace eaglesim::test
