#include "cost_model/yaml_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_set>
#include <utility>

#include <yaml-cpp/eventhandler.h>

#include "cost_model/input_file.hpp"

namespace overlap {

YamlReader::YamlReader(YAML::Node node, std::string path, std::string file)
    : node_(std::move(node)), path_(std::move(path)), file_(std::move(file)) {}

int YamlReader::line() const {
  // YAML::Mark is 0-based; a node built in code (e.g. by --set) has the null mark (line -1).
  const YAML::Mark mark = node_.Mark();
  return mark.line >= 0 ? mark.line + 1 : 0;
}

bool YamlReader::has(const std::string& key) const {
  if (!node_.IsMap()) return false;
  const YAML::Node c = node_[key];
  if (!c) return false;
  // `key: ~` or `key:` with nothing after it: refused, never read as "not given" (`schemes: ~`
  // would otherwise mean every scheme). A null built in code (an empty --set value) is reported
  // by the --set attribution as that assignment.
  if (c.IsNull()) YamlReader(c, child_path(key), file_).fail("has no value (give one, or leave the key out)");
  return true;
}

std::string YamlReader::child_path(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

std::string YamlReader::scalar_text() const {
  if (node_.IsScalar()) return node_.Scalar();
  if (node_.IsMap()) return "a map";
  if (node_.IsSequence()) return "a list";
  return "nothing";
}

std::string YamlReader::not_plain_text() const {
  const std::string& tag = node_.Tag();
  if (tag == "!") return "a quoted string or block scalar, not a number (got \"" + node_.Scalar() + "\")";
  return "a value tagged " + tag + ", not a number";
}

void YamlReader::fail(const std::string& message) const {
  throw InputError(file_, line(), path_, message);
}

void YamlReader::fail_at(const std::string& key, const std::string& message) const {
  if (node_.IsMap() && node_[key]) {
    YamlReader(node_[key], child_path(key), file_).fail(message);
  }
  throw InputError(file_, line(), child_path(key), message);
}

void YamlReader::expect_map() const {
  if (!node_.IsMap()) fail("must be a map (got " + scalar_text() + ")");
  // yaml-cpp keeps a repeated key and lookups see only one of them: the other would be silently
  // ignored, so a repeat is an error at its second occurrence.
  // A hash set: a map of 100,000 keys is checked in milliseconds, not minutes.
  std::unordered_set<std::string> seen;
  seen.reserve(node_.size());
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    if (!seen.insert(key).second) {
      const YAML::Mark mark = kv.first.Mark();
      throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, child_path(key), "key given twice");
    }
  }
}

void YamlReader::expect_sequence() const {
  if (!node_.IsSequence()) fail("must be a list (got " + scalar_text() + ")");
}

// A map key must be a plain name: YAML also allows a list or a map as a key ("? a: 1"), which no
// key path can name (found by tools/fuzz.sh: yaml-cpp's bad conversion was an internal error).
std::string YamlReader::key_text(const YAML::Node& key) const {
  if (key.IsScalar()) return key.Scalar();
  const YAML::Mark mark = key.Mark();
  throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, path_, "a key must be a plain name, not a list or a map");
}

void YamlReader::allow_keys(const std::vector<std::string>& allowed) const {
  expect_map();
  const std::unordered_set<std::string> allowed_set(allowed.begin(), allowed.end());
  for (const auto& kv : node_) {
    const std::string key = key_text(kv.first);
    if (allowed_set.count(key) != 0) continue;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    const YAML::Mark mark = kv.first.Mark();
    throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, child_path(key),
                     "unknown key (allowed: " + list + ")");
  }
}

YamlReader YamlReader::child(const std::string& key) const {
  expect_map();
  if (!has(key)) throw InputError(file_, line(), child_path(key), "missing required field");
  return YamlReader(node_[key], child_path(key), file_);
}

std::optional<YamlReader> YamlReader::optional_child(const std::string& key) const {
  expect_map();
  if (!has(key)) return std::nullopt;
  return YamlReader(node_[key], child_path(key), file_);
}

YamlReader YamlReader::element(std::size_t index) const {
  expect_sequence();
  // "a.b.3", the syntax --set accepts back (cost_model/overrides.hpp).
  return YamlReader(node_[index], (path_.empty() ? "" : path_ + ".") + std::to_string(index), file_);
}

std::vector<std::string> YamlReader::keys() const {
  expect_map();
  std::vector<std::string> out;
  for (const auto& kv : node_) out.push_back(key_text(kv.first));
  return out;
}

std::string YamlReader::as_string() const {
  if (!node_.IsScalar()) fail("must be a string (got " + scalar_text() + ")");
  return node_.Scalar();
}

std::int64_t YamlReader::as_int() const {
  if (node_.IsScalar()) {
    if (!is_plain_scalar(node_)) fail("must be an integer: " + not_plain_text());
    if (const auto v = parse_decimal_int(node_.Scalar())) return *v;
  }
  fail("must be an integer (got " + scalar_text() + ")");
}

double YamlReader::as_double() const {
  if (node_.IsScalar()) {
    if (!is_plain_scalar(node_)) fail("must be a number: " + not_plain_text());
    if (const auto v = parse_decimal_real(node_.Scalar())) return *v;
  }
  fail("must be a number (got " + scalar_text() + ")");
}

bool YamlReader::as_bool() const {
  if (node_.IsScalar() && is_plain_scalar(node_)) {
    try {
      return node_.as<bool>();
    } catch (const YAML::Exception&) {
    }
  }
  fail("must be true or false (got " + scalar_text() + ")");
}

std::string YamlReader::get_string(const std::string& key) const { return child(key).as_string(); }
std::string YamlReader::get_string(const std::string& key, const std::string& fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_string() : fallback;
}

std::int64_t YamlReader::get_int(const std::string& key) const { return child(key).as_int(); }
std::int64_t YamlReader::get_int(const std::string& key, std::int64_t fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_int() : fallback;
}

namespace {
std::int64_t positive_int(const YamlReader& r) {
  if (!r.is_scalar()) r.fail("must be a positive integer (got a " + std::string(r.is_map() ? "map" : "list") + ")");
  if (!is_plain_scalar(r.node())) r.fail("must be a positive integer: " + r.not_plain_text());
  const auto parsed = parse_decimal_int(r.node().Scalar());
  if (!parsed) r.fail("must be a positive integer (got " + r.node().Scalar() + ")");
  const std::int64_t v = *parsed;
  if (v <= 0) r.fail("must be a positive integer (got " + r.node().Scalar() + ")");
  return v;
}
}  // namespace

std::int64_t YamlReader::get_positive_int(const std::string& key) const {
  return positive_int(child(key));
}
std::int64_t YamlReader::get_positive_int(const std::string& key, std::int64_t fallback) const {
  const auto c = optional_child(key);
  return c ? positive_int(*c) : fallback;
}
std::int64_t YamlReader::get_nonnegative_int(const std::string& key, std::int64_t fallback) const {
  const auto c = optional_child(key);
  if (!c) return fallback;
  const std::int64_t v = c->as_int();
  if (v < 0) c->fail("must be a non-negative integer (got " + c->node().Scalar() + ")");
  return v;
}

double YamlReader::get_double(const std::string& key) const { return child(key).as_double(); }
double YamlReader::get_double(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_double() : fallback;
}

namespace {
double positive_double(const YamlReader& r) {
  const double v = r.as_double();
  if (!(v > 0) || !std::isfinite(v)) r.fail("must be a positive number (got " + r.node().Scalar() + ")");
  return v;
}
}  // namespace

double YamlReader::get_positive_double(const std::string& key) const {
  return positive_double(child(key));
}
double YamlReader::get_positive_double(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  return c ? positive_double(*c) : fallback;
}
double YamlReader::get_nonnegative_double(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  if (!c) return fallback;
  const double v = c->as_double();
  if (!(v >= 0) || !std::isfinite(v)) c->fail("must be a non-negative number (got " + c->node().Scalar() + ")");
  return v;
}
double YamlReader::get_fraction(const std::string& key, double fallback) const {
  const auto c = optional_child(key);
  if (!c) return fallback;
  const double v = c->as_double();
  if (!(v > 0 && v <= 1)) c->fail("must be a fraction in (0, 1] (got " + c->node().Scalar() + ")");
  return v;
}
bool YamlReader::get_bool(const std::string& key, bool fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_bool() : fallback;
}

std::int64_t YamlReader::as_int_in(const InputRange& range) const {
  if (!node_.IsScalar()) fail("must be an integer in " + range_text(range) + " (got " + scalar_text() + ")");
  if (!is_plain_scalar(node_)) fail("must be an integer in " + range_text(range) + ": " + not_plain_text());
  const auto parsed = parse_decimal_int(node_.Scalar());
  if (!parsed) {
    // Not an int64: a number out of its range (1e18, 99999999999999999999) says so with the limit.
    if (const auto d = parse_decimal_real(node_.Scalar())) {
      if (const auto why = range_violation(range, *d, node_.Scalar())) fail(*why);
    }
    fail("must be an integer in " + range_text(range) + " (got " + node_.Scalar() + ")");
  }
  const std::int64_t v = *parsed;
  if (const auto why = range_violation(range, static_cast<double>(v), node_.Scalar())) fail(*why);
  return v;
}

double YamlReader::as_double_in(const InputRange& range) const {
  const double v = as_double();
  if (const auto why = range_violation(range, v, node_.Scalar())) fail(*why);
  return v;
}

std::int64_t YamlReader::get_int_in(const std::string& key, const InputRange& range) const {
  return child(key).as_int_in(range);
}
std::int64_t YamlReader::get_int_in(const std::string& key, const InputRange& range, std::int64_t fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_int_in(range) : fallback;
}
double YamlReader::get_double_in(const std::string& key, const InputRange& range) const {
  return child(key).as_double_in(range);
}
double YamlReader::get_double_in(const std::string& key, const InputRange& range, double fallback) const {
  const auto c = optional_child(key);
  return c ? c->as_double_in(range) : fallback;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// [+-]?D+ (integer) or [+-]?(D+(.D*)?|.D+)([eE][+-]?D+)? (real): the whole text, nothing else.
bool decimal_syntax(const std::string& t, bool integer) {
  std::size_t i = 0;
  if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
  std::size_t digits = 0;
  while (i < t.size() && is_digit(t[i])) ++i, ++digits;
  if (integer) return digits > 0 && i == t.size();
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && is_digit(t[i])) ++i, ++digits;
  }
  if (digits == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < t.size() && is_digit(t[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == t.size();
}

// The length of the UTF-8 sequence at text[i], or 0 when it is not valid UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF included; RFC 3629 section 4).
std::size_t utf8_sequence(const std::string& text, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c == 0xE0) n = 3, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC) n = 3;
  else if (c == 0xED) n = 3, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF) n = 3;
  else if (c == 0xF0) n = 4, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3) n = 4;
  else if (c == 0xF4) n = 4, hi = 0x8F;
  else return 0;
  if (i + n > text.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

// Walks the parser's events (not the node tree, which shares aliased nodes and would be expanded by
// every consumer): counts documents and expanded nodes, refuses recursive aliases, checks tags and
// UTF-8, and tracks the key path for the messages.
class YamlScan : public YAML::EventHandler {
 public:
  explicit YamlScan(std::string file) : file_(std::move(file)) {}

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1)
      refuse(mark, "", "a second YAML document (after --- or ...) is not read; give one document per file");
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override { leaf(mark, anchor, 1, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    // An alias inside the collection it names makes a cycle (`a: &a [*a]`), which every walk of the
    // tree would follow forever (found by tools/fuzz.sh: a stack overflow).
    for (const Frame& f : stack_)
      if (f.anchor != 0 && f.anchor == anchor)
        refuse(mark, path(), "an alias inside the node it refers to (a recursive structure) is not read");
    leaf(mark, 0, anchor < sizes_.size() ? sizes_[anchor] : 1, nullptr);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    check_tag(mark, tag);
    if (!valid_utf8(value)) refuse(mark, path(), "is not valid UTF-8 text");
    leaf(mark, anchor, 1, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, tag, anchor, false);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, tag, anchor, true);
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    bool map = false;
    bool at_key = true;  // a map's next item is a key
    std::size_t index = 0;
    std::string key;  // the key whose value is being read ("" while reading a key that is not a scalar)
    YAML::anchor_t anchor = 0;
    std::int64_t nodes = 1;  // this collection and everything in it so far
  };

  static bool valid_utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
      const std::size_t n = utf8_sequence(s, i);
      if (n == 0) return false;
      i += n;
    }
    return true;
  }

  std::string path() const {
    std::string out;
    for (const Frame& f : stack_) {
      if (f.map && f.at_key) break;  // a key, not a value, is being read: its map is the path
      const std::string seg = f.map ? f.key : std::to_string(f.index);
      out += (out.empty() ? "" : ".") + seg;
    }
    return out;
  }

  [[noreturn]] void refuse(const YAML::Mark& mark, const std::string& key, const std::string& message) const {
    throw InputError(file_, mark.line >= 0 ? mark.line + 1 : 0, key, message);
  }

  void check_tag(const YAML::Mark& mark, const std::string& tag) const {
    // "?" plain, "!" quoted or block scalar (or an explicit non-specific `!`), "" untagged.
    if (tag.empty() || tag == "?" || tag == "!") return;
    std::string shown = tag;
    const std::string core = "tag:yaml.org,2002:";
    if (shown.rfind(core, 0) == 0) shown = "!!" + shown.substr(core.size());
    if (!valid_utf8(shown)) shown = "(a tag that is not UTF-8)";
    refuse(mark, path(), "YAML tags are not read (got " + shown + "); write the value plainly");
  }

  void add(const YAML::Mark& mark, std::int64_t nodes) {
    if (!stack_.empty()) stack_.back().nodes = std::min<std::int64_t>(stack_.back().nodes + nodes, kMaxYamlNodes + 1);
    count(mark, nodes);
  }

  // Every node read or stood for by an alias counts once, as it is met.
  void count(const YAML::Mark& mark, std::int64_t nodes) {
    total_ = std::min<std::int64_t>(total_ + nodes, kMaxYamlNodes + 1);
    if (total_ > kMaxYamlNodes)
      refuse(mark, "",
             "more than " + std::to_string(kMaxYamlNodes) +
                 " YAML nodes, counting each alias as the nodes it stands for; refused (nested anchors expand "
                 "exponentially)");
  }

  void record_anchor(YAML::anchor_t anchor, std::int64_t nodes) {
    if (anchor == 0) return;
    if (sizes_.size() <= anchor) sizes_.resize(anchor + 1, 1);
    sizes_[anchor] = nodes;
  }

  // A scalar, null or alias has been read: it is a key or a value of the open collection.
  void leaf(const YAML::Mark& mark, YAML::anchor_t anchor, std::int64_t nodes, const std::string* value) {
    record_anchor(anchor, nodes);
    add(mark, nodes);
    advance(value);
  }

  void advance(const std::string* key_value) {
    if (stack_.empty()) return;
    Frame& f = stack_.back();
    if (f.map) {
      if (f.at_key) f.key = key_value ? *key_value : std::string();
      else ++f.index;
      f.at_key = !f.at_key;
    } else {
      ++f.index;
    }
  }

  void open(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor, bool map) {
    check_tag(mark, tag);
    Frame f;
    f.map = map;
    f.anchor = anchor;
    stack_.push_back(std::move(f));
    count(mark, 1);
  }

  void close() {
    const Frame f = std::move(stack_.back());
    stack_.pop_back();
    record_anchor(f.anchor, f.nodes);
    if (!stack_.empty()) stack_.back().nodes = std::min<std::int64_t>(stack_.back().nodes + f.nodes, kMaxYamlNodes + 1);
    advance(nullptr);
  }

  std::string file_;
  int documents_ = 0;
  std::int64_t total_ = 0;
  std::vector<Frame> stack_;
  std::vector<std::int64_t> sizes_;  // expanded node count per anchor id
};

}  // namespace

std::optional<std::int64_t> parse_decimal_int(const std::string& text) {
  if (!decimal_syntax(text, true)) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);  // base 10: leading zeros stay decimal
  if (errno == ERANGE || end != text.c_str() + text.size()) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

std::optional<double> parse_decimal_real(const std::string& text) {
  if (!decimal_syntax(text, false)) return std::nullopt;
  // The syntax above excludes strtod's hex, inf and nan spellings; 1e999 becomes inf, which every
  // range check refuses with its limit.
  std::istringstream in(text);
  in.imbue(std::locale::classic());
  double v = 0;
  in >> v;
  if (in.fail()) {
    // Out of double's range: its sign tells which end.
    return text.find('e') != std::string::npos || text.find('E') != std::string::npos
               ? std::optional<double>(text[0] == '-' ? -HUGE_VAL : HUGE_VAL)
               : std::nullopt;
  }
  return v;
}

std::string utf8_or_replaced(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

bool is_plain_scalar(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  return tag.empty() || tag == "?";
}

// A directive line (%YAML, %TAG, or any %) after a document's end marker "..." opens a second
// document (YAML 1.2 section 9.1.2, "Explicit documents"); with no "---" after it yaml-cpp drops the
// directive without a word. Refused at its line, as a second document is.
void refuse_directive_after_end(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  bool ended = false;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.rfind("...", 0) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '#')) ended = true;
    else if (ended && !line.empty() && line[0] == '%')
      throw InputError(file, n, "",
                       "a YAML directive after the document's end marker '...' starts a second document, which is not "
                       "read; give one document per file");
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  refuse_directive_after_end(text, file);
  try {
    {
      std::istringstream in(text);
      YAML::Parser parser(in);
      YamlScan scan(file);
      while (parser.HandleNextDocument(scan)) {
      }
    }
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw InputError(file, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw InputError(file, e.mark.line >= 0 ? e.mark.line + 1 : 0, "", "not readable as YAML: " + e.msg);
  }
}

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  return parse_yaml(read_input_file(path, what), path);
}

}  // namespace overlap
