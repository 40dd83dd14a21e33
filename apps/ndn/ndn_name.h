// NDN names on the control-plane side: the NDN URI form (`/com/example/www/a`), names derived from
// URLs (host labels reversed, then path segments: http://www.example.com/a/b -> /com/example/www/a/b,
// as the G-Opt paper builds its NDN names), and Interest packets encoded in TLV v0.3 (the traffic
// generator's and the tests' side of apps/ndn/ndn_tlv.h).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "apps/ndn/ndn_tlv.h"

namespace tandem::ndn {

// A name: its components' bytes (generic components, type 8).
using Name = std::vector<std::string>;

class NameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses the NDN URI form: "/" alone is the empty name; each component is percent-encoded bytes
// (unreserved characters A-Z a-z 0-9 - . _ ~ may appear as is); a component of only periods stands
// for that many periods minus three ("..." is the empty component, "...." is "."). An optional
// "ndn:" scheme is accepted. Throws NameError naming the problem (no leading '/', a bad %XX, a
// component of one or two periods, which the URI form reserves).
Name parse_uri(std::string_view uri);

// The URI form of a name, as above (the inverse of parse_uri).
std::string to_uri(const Name& name);

// The name of a URL: host labels in reverse order, then the path's segments (empty segments kept
// as empty components, a trailing '/' adding none; scheme, user info, port, query and fragment
// dropped; bytes as in the URL).
// Throws NameError for a URL without a host.
Name name_of_url(std::string_view url);

// An Interest for `name` with a Nonce and, optionally, CanBePrefix / MustBeFresh, in TLV v0.3,
// using the shortest VAR-NUMBER encodings.
std::vector<uint8_t> encode_interest(const Name& name, uint32_t nonce, bool can_be_prefix = false,
                                     bool must_be_fresh = false);

// The components of `name` in TLV wire form (generic components, shortest encodings), as inside an
// Interest's Name; with `ends`, the offset just past each component.
std::vector<uint8_t> name_wire_bytes(const Name& name, std::vector<uint32_t>* ends = nullptr);

// Appends a TLV VAR-NUMBER in its shortest encoding.
void append_var_number(std::vector<uint8_t>& out, uint64_t v);

// The components of a parsed Interest as byte strings (generic or not).
Name name_of(const uint8_t* packet, const NdnName& parsed);

}  // namespace tandem::ndn
