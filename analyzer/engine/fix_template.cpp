#include "engine/fix_template.h"

#include <cctype>

namespace mlsem {
namespace {

class TemplateParser {
 public:
  explicit TemplateParser(std::string_view s) : s_(s) {}

  std::variant<FixTemplate, ParseError> run() {
    FixTemplate t;
    t.text = std::string(s_);
    if (!pieces(t.pieces, false)) return error_;
    if (pos_ != s_.size()) return ParseError{pos_, "unbalanced ']'"};
    for (const auto& p : t.pieces)
      if (p.kind != FixPiece::Kind::kText) t.plain = false;
    return t;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
  ParseError error_;

  bool fail(size_t at, std::string message) {
    error_ = {at, std::move(message)};
    return false;
  }

  static void add_text(std::vector<FixPiece>& out, char c) {
    if (out.empty() || out.back().kind != FixPiece::Kind::kText) out.push_back({});
    out.back().text += c;
  }

  // Text, placeholders and segments up to the end, or (in a segment) up to the ']'
  // that closes it; literal brackets inside must balance.
  bool pieces(std::vector<FixPiece>& out, bool in_segment) {
    int depth = 0;  // literal '[' open inside this segment
    while (pos_ < s_.size()) {
      char c = s_[pos_];
      if (c == '{' && s_.substr(pos_).starts_with("{{")) {
        add_text(out, '{');
        pos_ += 2;
      } else if (c == '}' && s_.substr(pos_).starts_with("}}")) {
        add_text(out, '}');
        pos_ += 2;
      } else if (c == '{' && looks_like_placeholder()) {
        if (!placeholder(out)) return false;
      } else if (c == '[' && s_.substr(pos_).starts_with("[?")) {
        if (!segment(out)) return false;
      } else if (c == ']' && depth == 0 && in_segment) {
        return true;
      } else {
        if (c == '[') ++depth;
        if (c == ']') --depth;
        add_text(out, c);
        ++pos_;
      }
    }
    if (in_segment) return fail(s_.size(), "optional segment '[?' not closed with ']'");
    return true;
  }

  // `{name...}` or `{name...|default}`: other braces (C blocks, dict displays) are text.
  bool looks_like_placeholder() const {
    size_t i = pos_ + 1;
    if (i < s_.size() && s_[i] == '#') ++i;
    if (i >= s_.size() || !(std::isalpha(static_cast<unsigned char>(s_[i])) || s_[i] == '_')) return false;
    while (i < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i])) || s_[i] == '_' || s_[i] == '.')) ++i;
    if (i < s_.size() && s_[i] == '|') i = s_.find_first_of("{}", i);
    return i < s_.size() && s_[i] == '}';
  }

  bool ref(FixRef& r, std::string_view stop) {
    size_t start = pos_;
    std::string part;
    auto flush = [&]() {
      if (part.empty()) return fail(pos_, "empty name in a reference");
      if (r.label.empty()) r.label = part;
      else r.path.push_back(part);
      part.clear();
      return true;
    };
    while (pos_ < s_.size() && stop.find(s_[pos_]) == std::string_view::npos) {
      char c = s_[pos_];
      if (c == '.') {
        if (!flush()) return false;
      } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c == '#' && part.empty() && r.label.empty())) {
        part += c;
      } else if (c != ' ') {
        return fail(pos_, std::string("unexpected '") + c + "' in a reference");
      }
      ++pos_;
    }
    if (pos_ == s_.size()) return fail(start, "reference not closed");
    if (!flush()) return false;
    if (std::isdigit(static_cast<unsigned char>(r.label[0])))
      return fail(start, "a reference starts with a label, not an input index");
    r.text = std::string(s_.substr(start, pos_ - start));
    while (!r.text.empty() && r.text.back() == ' ') r.text.pop_back();
    while (!r.text.empty() && r.text.front() == ' ') r.text.erase(0, 1);
    return true;
  }

  bool placeholder(std::vector<FixPiece>& out) {
    ++pos_;  // '{'
    FixPiece p;
    p.kind = FixPiece::Kind::kRef;
    if (!ref(p.ref, "|}")) return false;
    if (s_[pos_] == '|') {
      size_t close = s_.find('}', pos_);
      if (close == std::string_view::npos) return fail(pos_, "placeholder not closed with '}'");
      p.fallback = std::string(s_.substr(pos_ + 1, close - pos_ - 1));
      pos_ = close;
    }
    ++pos_;  // '}'
    out.push_back(std::move(p));
    return true;
  }

  bool segment(std::vector<FixPiece>& out) {
    size_t start = pos_;
    pos_ += 2;  // "[?"
    FixPiece p;
    p.kind = FixPiece::Kind::kSegment;
    while (true) {
      while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
      bool negated = pos_ < s_.size() && s_[pos_] == '!';
      if (negated) ++pos_;
      FixPiece::Condition cond;
      cond.negated = negated;
      if (!ref(cond.ref, ",:=")) return false;
      if (s_[pos_] == '=') {
        size_t end = s_.find_first_of(",:", ++pos_);
        if (end == std::string_view::npos) return fail(pos_, "condition not closed with ':'");
        std::string_view v = s_.substr(pos_, end - pos_);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
        if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
        cond.equals = std::string(v);
        pos_ = end;
      }
      p.conditions.push_back(std::move(cond));
      if (s_[pos_++] == ':') break;
    }
    if (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;  // "[?cond: body]": one space separates
    if (!pieces(p.body, true)) return false;
    if (pos_ >= s_.size()) return fail(start, "optional segment '[?' not closed with ']'");
    ++pos_;  // ']'
    out.push_back(std::move(p));
    return true;
  }
};

void collect(const std::vector<FixPiece>& pieces, std::vector<FixRef>& out) {
  for (const auto& p : pieces) {
    if (p.kind == FixPiece::Kind::kRef) out.push_back(p.ref);
    for (const auto& c : p.conditions) out.push_back(c.ref);
    collect(p.body, out);
  }
}

bool truthy(const std::optional<std::string>& v) { return v && !v->empty() && *v != "False"; }

// Appends the rendering of `pieces`; false when a segment's placeholder has no value
// (the caller drops the segment). At the top level missing values are never fatal.
bool render(const std::vector<FixPiece>& pieces, const FixLookup& lookup, bool top, std::string& out) {
  for (const auto& p : pieces) {
    switch (p.kind) {
      case FixPiece::Kind::kText:
        out += p.text;
        break;
      case FixPiece::Kind::kRef: {
        std::optional<std::string> v = lookup(p.ref);
        if (v && !v->empty()) out += *v;
        else if (p.fallback) out += *p.fallback;
        else if (top) out += p.ref.path.empty() ? p.ref.label : p.ref.path.back();
        else return false;
        break;
      }
      case FixPiece::Kind::kSegment: {
        bool keep = true;
        for (const auto& c : p.conditions) {
          std::optional<std::string> v = lookup(c.ref);
          bool holds = c.equals ? v && *v == *c.equals : truthy(v);
          if (holds == c.negated) keep = false;
        }
        if (!keep) break;
        std::string body;
        if (render(p.body, lookup, false, body)) out += body;
        break;
      }
    }
  }
  return true;
}

}  // namespace

std::variant<FixTemplate, ParseError> parse_fix_template(std::string_view text) { return TemplateParser(text).run(); }

void collect_fix_refs(const FixTemplate& t, std::vector<FixRef>& out) { collect(t.pieces, out); }

std::string render_fix(const FixTemplate& t, const FixLookup& lookup) {
  std::string out;
  render(t.pieces, lookup, true, out);
  return out;
}

}  // namespace mlsem
