// A KeyLookup (apps/registry.h) from three pieces: parse a key line, look a chunk of keys up, print
// a key. Results equal to `no_match` print as '-'.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "apps/registry.h"

namespace tandem {

template <class Key, class Parse, class Lookup, class Format>
class KeyLookupImpl final : public KeyLookup {
 public:
  KeyLookupImpl(Parse parse, Lookup lookup, Format format, uint32_t no_match)
      : parse_(std::move(parse)), lookup_(std::move(lookup)), format_(std::move(format)), no_match_(no_match) {}

  bool add(std::string_view text, std::string* why) override {
    Key k{};
    if (!parse_(text, &k, why)) return false;
    keys_.push_back(std::move(k));
    return true;
  }
  size_t pending() const override { return keys_.size(); }
  void flush(std::string* out) override {
    results_.resize(keys_.size());
    if (!keys_.empty()) lookup_(keys_.data(), results_.data(), keys_.size());
    for (size_t i = 0; i < keys_.size(); ++i) {
      *out += format_(keys_[i]);
      *out += ' ';
      *out += results_[i] == no_match_ ? std::string("-") : std::to_string(results_[i]);
      *out += '\n';
    }
    keys_.clear();
  }

 private:
  Parse parse_;
  Lookup lookup_;
  Format format_;
  uint32_t no_match_;
  std::vector<Key> keys_;
  std::vector<uint32_t> results_;
};

// parse(text, &key, &why) -> bool; lookup(const Key*, uint32_t*, n); format(const Key&) -> string.
template <class Key, class Parse, class Lookup, class Format>
std::unique_ptr<KeyLookup> make_key_lookup(Parse parse, Lookup lookup, Format format, uint32_t no_match) {
  return std::make_unique<KeyLookupImpl<Key, Parse, Lookup, Format>>(std::move(parse), std::move(lookup),
                                                                     std::move(format), no_match);
}

}  // namespace tandem
