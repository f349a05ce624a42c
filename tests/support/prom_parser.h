// A strict parser of the Prometheus text exposition format 0.0.4, for tests of /metrics. It
// throws std::runtime_error("line N: ...") on anything a Prometheus server would reject or that
// breaks the conventions netqos promises:
//  - line grammar: "# HELP name text", "# TYPE name type", other "#" comments, samples
//    `name{label="value",...} value [timestamp]`; metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label
//    names [a-zA-Z_][a-zA-Z0-9_]* (not "__..."); only the escapes backslash-backslash,
//    backslash-quote and backslash-n in label values (no quote in HELP); values are floats,
//    +Inf, -Inf or NaN; the text ends with a newline;
//  - families: TYPE (and HELP) at most once and before the family's first sample, a family's
//    samples in one block, no series twice, every sample typed (option);
//  - counters: names end in _total (option), values >= 0;
//  - histograms: only _bucket (with le), _sum and _count; per series, le strictly increasing and
//    ending at +Inf, bucket counts non-decreasing, the +Inf bucket equal to _count, _sum present.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace netqos::testing {

using PromLabels = std::map<std::string, std::string>;

struct PromSample {
  std::string name;  // as written: foo_total, foo_bucket, foo_sum, ...
  PromLabels labels;
  double value = 0;
  int line = 0;
};

struct PromFamily {
  std::string name;
  std::string type = "untyped";
  std::string help;
  bool has_help = false;
  std::vector<PromSample> samples;
};

struct PromParseOptions {
  bool require_type = true;           // a sample without # TYPE is an error
  bool require_help = true;           // a TYPE without a HELP is an error
  bool counters_end_in_total = true;  // netqos's convention (and OpenMetrics')
};

class PromDocument {
 public:
  std::map<std::string, PromFamily> families;

  const PromFamily& Family(const std::string& name) const {
    auto it = families.find(name);
    if (it == families.end()) throw std::runtime_error("no metric family " + name);
    return it->second;
  }
  bool Has(const std::string& family) const { return families.count(family) > 0; }

  // Samples named `name` whose labels include every pair of `match`.
  std::vector<PromSample> Samples(const std::string& name, const PromLabels& match = {}) const {
    std::vector<PromSample> out;
    for (const auto& [fname, f] : families) {
      for (const auto& s : f.samples) {
        if (s.name != name) continue;
        bool ok = true;
        for (const auto& [k, v] : match) {
          auto it = s.labels.find(k);
          ok = ok && it != s.labels.end() && it->second == v;
        }
        if (ok) out.push_back(s);
      }
    }
    return out;
  }
  // The one matching sample's value; nullopt if none; throws if several match.
  std::optional<double> Find(const std::string& name, const PromLabels& match = {}) const {
    auto s = Samples(name, match);
    if (s.empty()) return std::nullopt;
    if (s.size() > 1)
      throw std::runtime_error(std::to_string(s.size()) + " samples of " + name + " match");
    return s.front().value;
  }
  // Find(), throwing when nothing matches.
  double Value(const std::string& name, const PromLabels& match = {}) const {
    auto v = Find(name, match);
    if (!v) throw std::runtime_error("no sample " + name + " with the given labels");
    return *v;
  }
  // Find(), 0 when nothing matches (a counter series not created yet).
  double ValueOr0(const std::string& name, const PromLabels& match = {}) const {
    return Find(name, match).value_or(0);
  }
};

namespace prom_detail {

inline bool IsMetricName(const std::string& s) {
  static const std::regex re("^[a-zA-Z_:][a-zA-Z0-9_:]*$");
  return std::regex_match(s, re);
}
inline bool IsLabelName(const std::string& s) {
  static const std::regex re("^[a-zA-Z_][a-zA-Z0-9_]*$");
  return std::regex_match(s, re) && s.rfind("__", 0) != 0;
}
inline std::optional<double> ParseValue(const std::string& s) {
  if (s == "+Inf" || s == "Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return std::nan("");
  static const std::regex re("^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([eE][+-]?[0-9]+)?$");
  if (!std::regex_match(s, re)) return std::nullopt;
  return std::stod(s);
}
inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
inline std::string Describe(const PromLabels& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) out += (out.size() > 1 ? "," : "") + k + "=\"" + v + "\"";
  return out + "}";
}

class Parser {
 public:
  Parser(const std::string& text, PromParseOptions options) : text_(text), options_(options) {}

  PromDocument Run() {
    if (!text_.empty() && text_.back() != '\n') Fail(0, "the text does not end with a newline");
    std::istringstream in(text_);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      line_ = n;
      ParseLine(line);
    }
    for (const auto& [name, f] : doc_.families) CheckFamily(f);
    return std::move(doc_);
  }

 private:
  [[noreturn]] void Fail(int line, const std::string& what) const {
    throw std::runtime_error("prometheus text, line " + std::to_string(line) + ": " + what);
  }
  [[noreturn]] void Fail(const std::string& what) const { Fail(line_, what); }

  static bool IsBlank(char c) { return c == ' ' || c == '\t'; }
  void SkipBlanks(const std::string& l, size_t& i) const {
    while (i < l.size() && IsBlank(l[i])) ++i;
  }
  std::string Token(const std::string& l, size_t& i) const {
    SkipBlanks(l, i);
    const size_t start = i;
    while (i < l.size() && !IsBlank(l[i])) ++i;
    return l.substr(start, i - start);
  }
  std::string Name(const std::string& l, size_t& i) const {
    SkipBlanks(l, i);
    const size_t start = i;
    while (i < l.size() &&
           (std::isalnum(static_cast<unsigned char>(l[i])) || l[i] == '_' || l[i] == ':'))
      ++i;
    std::string name = l.substr(start, i - start);
    if (!IsMetricName(name)) Fail("invalid metric name \"" + name + "\"");
    return name;
  }

  void ParseLine(const std::string& l) {
    size_t i = 0;
    SkipBlanks(l, i);
    if (i == l.size()) return;  // empty lines are allowed
    if (l[i] == '#') {
      ++i;
      std::string word = Token(l, i);
      if (word != "HELP" && word != "TYPE") return;  // a plain comment
      std::string name = Name(l, i);
      if (i < l.size() && !IsBlank(l[i])) Fail("invalid metric name in " + word + " line");
      if (word == "TYPE") {
        std::string type = Token(l, i);
        SkipBlanks(l, i);
        if (i != l.size()) Fail("trailing text after TYPE");
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.count(type)) Fail("unknown type \"" + type + "\"");
        DeclareType(name, type);
      } else {
        if (i < l.size()) ++i;  // the one separating blank; the rest is the docstring
        DeclareHelp(name, Unescape(l.substr(std::min(i, l.size())), false));
      }
      return;
    }
    ParseSample(l, i);
  }

  std::string Unescape(const std::string& s, bool label_value) const {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\') {
        out += s[i];
        continue;
      }
      if (i + 1 == s.size()) Fail("dangling backslash");
      const char c = s[++i];
      if (c == '\\')
        out += '\\';
      else if (c == 'n')
        out += '\n';
      else if (c == '"' && label_value)
        out += '"';
      else
        Fail(std::string("invalid escape \\") + c);
    }
    return out;
  }

  PromFamily& Open(const std::string& family) {
    if (closed_.count(family)) Fail("family " + family + " appears in two separate blocks");
    if (!current_.empty() && current_ != family) closed_.insert(current_);
    current_ = family;
    PromFamily& f = doc_.families[family];
    f.name = family;
    return f;
  }

  void DeclareType(const std::string& name, const std::string& type) {
    if (typed_.count(name)) Fail("second TYPE line for " + name);
    if (sampled_.count(name)) Fail("TYPE for " + name + " after its samples");
    PromFamily& f = Open(name);
    typed_.insert(name);
    f.type = type;
    if (type == "counter" && options_.counters_end_in_total && !EndsWith(name, "_total"))
      Fail("counter " + name + " does not end in _total");
    if (options_.require_help && !f.has_help) Fail("TYPE of " + name + " without a HELP before it");
  }

  void DeclareHelp(const std::string& name, const std::string& help) {
    if (sampled_.count(name)) Fail("HELP for " + name + " after its samples");
    PromFamily& f = Open(name);
    if (f.has_help) Fail("second HELP line for " + name);
    f.has_help = true;
    f.help = help;
  }

  // The family a sample name belongs to.
  std::string FamilyOf(const std::string& name) const {
    if (typed_.count(name)) return name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (!EndsWith(name, suffix)) continue;
      const std::string base = name.substr(0, name.size() - std::string(suffix).size());
      auto it = doc_.families.find(base);
      if (it == doc_.families.end() || !typed_.count(base)) continue;
      if (it->second.type == "histogram") return base;
      if (it->second.type == "summary" && std::string(suffix) != "_bucket") return base;
    }
    return {};
  }

  void ParseSample(const std::string& l, size_t i) {
    PromSample s;
    s.line = line_;
    s.name = Name(l, i);
    if (i < l.size() && l[i] == '{') {
      ++i;
      for (;;) {
        SkipBlanks(l, i);
        if (i < l.size() && l[i] == '}') {
          ++i;
          break;
        }
        const size_t start = i;
        while (i < l.size() && (std::isalnum(static_cast<unsigned char>(l[i])) || l[i] == '_')) ++i;
        const std::string label = l.substr(start, i - start);
        if (!IsLabelName(label)) Fail("invalid label name \"" + label + "\"");
        SkipBlanks(l, i);
        if (i >= l.size() || l[i] != '=') Fail("expected = after label " + label);
        ++i;
        SkipBlanks(l, i);
        if (i >= l.size() || l[i] != '"') Fail("label value of " + label + " is not quoted");
        ++i;
        std::string raw;
        bool closed = false;
        while (i < l.size()) {
          if (l[i] == '\\' && i + 1 < l.size()) {
            raw += l[i];
            raw += l[i + 1];
            i += 2;
            continue;
          }
          if (l[i] == '"') {
            closed = true;
            ++i;
            break;
          }
          raw += l[i++];
        }
        if (!closed) Fail("unterminated label value of " + label);
        if (s.labels.count(label)) Fail("label " + label + " given twice");
        s.labels[label] = Unescape(raw, true);
        SkipBlanks(l, i);
        if (i < l.size() && l[i] == ',') {
          ++i;
          continue;
        }
        if (i < l.size() && l[i] == '}') {
          ++i;
          break;
        }
        Fail("expected , or } after label " + label);
      }
    }
    if (i < l.size() && !IsBlank(l[i])) Fail("no blank between the series and its value");
    const std::string value = Token(l, i);
    auto v = ParseValue(value);
    if (!v) Fail("invalid value \"" + value + "\"");
    s.value = *v;
    const std::string ts = Token(l, i);
    if (!ts.empty()) {
      static const std::regex re("^-?[0-9]+$");
      if (!std::regex_match(ts, re)) Fail("invalid timestamp \"" + ts + "\"");
    }
    SkipBlanks(l, i);
    if (i != l.size()) Fail("trailing text after the sample");

    std::string family = FamilyOf(s.name);
    if (family.empty()) {
      if (options_.require_type) Fail("sample " + s.name + " has no TYPE line before it");
      family = s.name;
    }
    const std::string key = s.name + Describe(s.labels);
    if (!series_.insert(key).second) Fail("series " + key + " given twice");
    PromFamily& f = Open(family);
    sampled_.insert(family);
    f.samples.push_back(std::move(s));
  }

  void CheckFamily(const PromFamily& f) const {
    if (f.type == "counter" || f.type == "gauge" || f.type == "untyped") {
      for (const auto& s : f.samples) {
        if (s.name != f.name) Fail(s.line, "sample " + s.name + " in " + f.type + " " + f.name);
        if (f.type == "counter" && !(s.value >= 0))
          Fail(s.line, "counter " + s.name + " is negative or NaN");
      }
    }
    if (f.type != "histogram") return;
    struct Series {
      std::vector<std::pair<double, double>> buckets;  // (le, cumulative count)
      std::optional<double> sum, count;
      int line = 0;
    };
    std::map<PromLabels, Series> series;
    for (const auto& s : f.samples) {
      PromLabels labels = s.labels;
      if (s.name == f.name + "_bucket") {
        auto le = labels.find("le");
        if (le == labels.end()) Fail(s.line, s.name + " without an le label");
        auto bound = ParseValue(le->second);
        if (!bound || std::isnan(*bound)) Fail(s.line, "invalid le \"" + le->second + "\"");
        labels.erase(le);
        Series& ser = series[labels];
        ser.line = s.line;
        if (!ser.buckets.empty() && !(ser.buckets.back().first < *bound))
          Fail(s.line, f.name + Describe(labels) + ": le values not increasing");
        if (!ser.buckets.empty() && s.value < ser.buckets.back().second)
          Fail(s.line, f.name + Describe(labels) + ": bucket counts decrease (not cumulative)");
        if (ser.sum || ser.count) Fail(s.line, "bucket after _sum/_count of the same series");
        ser.buckets.emplace_back(*bound, s.value);
      } else if (s.name == f.name + "_sum" || s.name == f.name + "_count") {
        if (labels.count("le")) Fail(s.line, s.name + " with an le label");
        Series& ser = series[labels];
        ser.line = s.line;
        if (s.name == f.name + "_sum")
          ser.sum = s.value;
        else
          ser.count = s.value;
      } else {
        Fail(s.line, "sample " + s.name + " in histogram " + f.name);
      }
    }
    for (const auto& [labels, ser] : series) {
      const std::string id = f.name + Describe(labels);
      if (ser.buckets.empty() || !std::isinf(ser.buckets.back().first) ||
          ser.buckets.back().first < 0)
        Fail(ser.line, id + ": no le=\"+Inf\" bucket");
      if (!ser.sum) Fail(ser.line, id + ": no _sum");
      if (!ser.count) Fail(ser.line, id + ": no _count");
      if (*ser.count != ser.buckets.back().second)
        Fail(ser.line, id + ": +Inf bucket " + std::to_string(ser.buckets.back().second) +
                           " != _count " + std::to_string(*ser.count));
      if (*ser.count < 0 || *ser.count != std::floor(*ser.count))
        Fail(ser.line, id + ": _count is not a count");
    }
  }

  const std::string& text_;
  PromParseOptions options_;
  PromDocument doc_;
  int line_ = 0;
  std::string current_;
  std::set<std::string> closed_;
  std::set<std::string> typed_;
  std::set<std::string> sampled_;
  std::set<std::string> series_;
};

}  // namespace prom_detail

// Parses `text` strictly (see the header comment); throws std::runtime_error naming the line.
inline PromDocument ParsePrometheusText(const std::string& text, PromParseOptions options = {}) {
  return prom_detail::Parser(text, options).Run();
}

}  // namespace netqos::testing
