#include "cost_model/overrides.hpp"

#include <cstdlib>
#include <set>

#include "cost_model/input_error.hpp"
#include "cost_model/yaml_reader.hpp"

namespace overlap {
namespace {

bool is_index(const std::string& s) {
  if (s.empty() || s.size() > 9) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A copy of `n` built in code: its nodes carry no YAML::Mark, so an error in an overridden value is
// reported without the (meaningless) line of the --set text. Tags are kept: a quoted "8192" stays a
// string, which a number key refuses (cost_model/yaml_reader.hpp).
struct DuplicateKey {
  std::string path;
};

// `path`: the key path of `n` under the --set's own path, for a repeated key's message.
YAML::Node without_marks(const YAML::Node& n, const std::string& path) {
  if (n.IsScalar()) {
    YAML::Node out(n.Scalar());
    out.SetTag(n.Tag());
    return out;
  }
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    std::size_t i = 0;
    for (const auto& e : n) out.push_back(without_marks(e, path + "." + std::to_string(i++)));
    return out;
  }
  if (n.IsMap()) {
    YAML::Node out(YAML::NodeType::Map);
    std::set<std::string> seen;
    for (const auto& kv : n) {
      // A flow map that repeats a key ("{chunks: 2, chunks: 4}") would keep the last value silently,
      // where the same map in a scenario file is refused (YamlReader::expect_map).
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) throw DuplicateKey{path + "." + key};
      out[key] = without_marks(kv.second, path + "." + key);
    }
    return out;
  }
  return YAML::Node();
}

}  // namespace

Override parse_override(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos) throw InputError("", 0, "--set", "expected PATH=VALUE (got '" + assignment + "')");
  Override o;
  o.value_text = assignment.substr(eq + 1);
  const std::string path = assignment.substr(0, eq);
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string seg = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (seg.empty()) throw InputError("", 0, "--set", "empty key in path '" + path + "'");
    o.path.push_back(seg);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return o;
}

void apply_override(YAML::Node& root, const Override& o) {
  std::string dotted;
  for (const auto& seg : o.path) dotted += (dotted.empty() ? "" : ".") + seg;
  YAML::Node value;
  try {
    value = without_marks(parse_yaml(o.value_text, ""), dotted);
  } catch (const InputError& e) {
    throw InputError("--set " + dotted + "=" + o.value_text, 0, dotted, "cannot read the value: " + e.message());
  } catch (const DuplicateKey& d) {
    throw InputError("--set " + dotted + "=" + o.value_text, 0, d.path, "key given twice in the value's map");
  }
  if (!root.IsMap()) root = YAML::Node(YAML::NodeType::Map);
  // Walk with reset(), never operator=: assigning a yaml-cpp node that came from operator[] would
  // overwrite the node it refers to instead of rebinding the cursor.
  YAML::Node cur;
  cur.reset(root);
  std::string walked;
  for (std::size_t i = 0; i + 1 < o.path.size(); ++i) {
    const std::string& seg = o.path[i];
    walked += (walked.empty() ? "" : ".") + seg;
    YAML::Node next;
    if (cur.IsSequence() && is_index(seg)) {
      const auto idx = static_cast<std::size_t>(std::atoi(seg.c_str()));
      if (idx >= cur.size()) throw InputError("", 0, walked, "--set: list index out of range");
      next.reset(cur[idx]);
    } else {
      if (!cur.IsMap()) cur = YAML::Node(YAML::NodeType::Map);  // replace a scalar by a map
      next.reset(cur[seg]);
    }
    if (!next.IsMap() && !next.IsSequence()) next = YAML::Node(YAML::NodeType::Map);
    cur.reset(next);
  }
  const std::string& last = o.path.back();
  if (cur.IsSequence() && is_index(last)) {
    const auto idx = static_cast<std::size_t>(std::atoi(last.c_str()));
    if (idx >= cur.size()) throw InputError("", 0, walked + "." + last, "--set: list index out of range");
    cur[idx] = value;
  } else {
    if (!cur.IsMap()) cur = YAML::Node(YAML::NodeType::Map);
    cur[last] = value;
  }
}

void apply_overrides(YAML::Node& root, const std::vector<std::string>& assignments) {
  for (const auto& a : assignments) apply_override(root, parse_override(a));
}

std::optional<std::string> override_source(const std::string& key_path, const std::vector<std::string>& assignments,
                                           const std::string& strip_prefix) {
  if (key_path.empty()) return std::nullopt;
  for (auto it = assignments.rbegin(); it != assignments.rend(); ++it) {
    const auto eq = it->find('=');
    if (eq == std::string::npos) continue;
    std::string path = it->substr(0, eq);
    if (!strip_prefix.empty() && path.rfind(strip_prefix, 0) == 0) path = path.substr(strip_prefix.size());
    const auto under = [](const std::string& longer, const std::string& shorter) {
      return longer.size() > shorter.size() && longer.compare(0, shorter.size(), shorter) == 0 &&
             longer[shorter.size()] == '.';
    };
    if (path == key_path || under(key_path, path) || under(path, key_path)) return *it;
  }
  return std::nullopt;
}

void rethrow_with_source(const InputError& e, const std::vector<std::string>& assignments,
                         const std::string& strip_prefix) {
  if (e.file().rfind("--set", 0) == 0) throw e;
  const auto path_of = [&](const std::string& a) {
    std::string path = a.substr(0, a.find('='));
    if (!strip_prefix.empty() && path.rfind(strip_prefix, 0) == 0) path = path.substr(strip_prefix.size());
    return path;
  };
  if (e.line() <= 0) {
    if (const auto source = override_source(e.key_path(), assignments, strip_prefix))
      throw InputError("--set " + *source, 0, e.key_path(), e.message());
  } else {
    // Located in a file, but the value itself came from --set (an empty --set value leaves the key
    // missing, reported at its map's line): the --set is where it came from.
    for (auto it = assignments.rbegin(); it != assignments.rend(); ++it) {
      if (path_of(*it) == e.key_path()) throw InputError("--set " + *it, 0, e.key_path(), e.message());
    }
  }
  // A rule between keys (tokens divisible by tp) broken by a --set of a sibling: say so.
  const auto parent = [](const std::string& p) { return p.substr(0, p.rfind('.') == std::string::npos ? 0 : p.rfind('.')); };
  if (!e.key_path().empty()) {
    for (auto it = assignments.rbegin(); it != assignments.rend(); ++it) {
      const std::string p = path_of(*it);
      if (p != e.key_path() && p.find('.') != std::string::npos && parent(p) == parent(e.key_path()))
        throw InputError(e.file(), e.line(), e.key_path(), e.message() + " (with --set " + *it + ")");
    }
  }
  // Any other rule between keys (tp against the profile's GPUs): the file's line is where the rule
  // broke, and every --set given is named with its text, since one of them may be the cause.
  if (!assignments.empty() && e.file().rfind("--", 0) != 0) {
    std::string with;
    for (const auto& a : assignments) with += (with.empty() ? "" : ", ") + std::string("--set ") + a;
    throw InputError(e.file(), e.line(), e.key_path(), e.message() + " (with " + with + ")");
  }
  throw e;
}

}  // namespace overlap
