#include "apps/ndn/ndn_name.h"

#include <algorithm>

namespace tandem::ndn {

const char* ndn_status_name(NdnStatus s) {
  switch (s) {
    case NdnStatus::kOk: return "ok";
    case NdnStatus::kTruncated: return "truncated";
    case NdnStatus::kBadLength: return "bad_length";
    case NdnStatus::kBadType: return "bad_type";
    case NdnStatus::kNotInterest: return "not_interest";
    case NdnStatus::kNoName: return "no_name";
    case NdnStatus::kTooManyComponents: return "too_many_components";
  }
  return "?";
}

namespace {

bool unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void put_tlv(std::vector<uint8_t>& out, uint64_t type, const uint8_t* value, size_t len) {
  append_var_number(out, type);
  append_var_number(out, len);
  out.insert(out.end(), value, value + len);
}

}  // namespace

void append_var_number(std::vector<uint8_t>& out, uint64_t v) {
  if (v < 253) {
    out.push_back(static_cast<uint8_t>(v));
    return;
  }
  const int bytes = v <= 0xFFFF ? 2 : v <= 0xFFFFFFFFu ? 4 : 8;
  out.push_back(bytes == 2 ? 253 : bytes == 4 ? 254 : 255);
  for (int i = bytes - 1; i >= 0; --i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

std::vector<uint8_t> name_wire_bytes(const Name& name, std::vector<uint32_t>* ends) {
  std::vector<uint8_t> out;
  if (ends) ends->clear();
  for (const std::string& c : name) {
    put_tlv(out, kTlvGenericComponent, reinterpret_cast<const uint8_t*>(c.data()), c.size());
    if (ends) ends->push_back(static_cast<uint32_t>(out.size()));
  }
  return out;
}

Name parse_uri(std::string_view uri) {
  const std::string_view original = uri;
  if (uri.substr(0, 4) == "ndn:") uri.remove_prefix(4);
  if (uri.empty() || uri[0] != '/') throw NameError("NDN URI must start with '/': `" + std::string(original) + "`");
  uri.remove_prefix(1);
  Name name;
  if (uri.empty()) return name;
  for (;;) {
    const size_t slash = uri.find('/');
    const std::string_view part = uri.substr(0, slash);
    std::string comp;
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c == '.'; })) {
      if (part.size() < 3) {
        throw NameError("NDN URI component `" + std::string(part) + "` is reserved (use ... for an empty component): `" +
                        std::string(original) + "`");
      }
      comp.assign(part.size() - 3, '.');
    } else {
      for (size_t i = 0; i < part.size(); ++i) {
        if (part[i] == '%') {
          const int hi = i + 2 < part.size() ? hex_value(part[i + 1]) : -1;
          const int lo = i + 2 < part.size() ? hex_value(part[i + 2]) : -1;
          if (hi < 0 || lo < 0) throw NameError("bad percent-escape in NDN URI `" + std::string(original) + "`");
          comp.push_back(static_cast<char>(hi * 16 + lo));
          i += 2;
        } else {
          comp.push_back(part[i]);
        }
      }
    }
    name.push_back(std::move(comp));
    if (slash == std::string_view::npos) break;
    uri.remove_prefix(slash + 1);
    if (uri.empty()) break;  // a trailing '/' ends the name
  }
  return name;
}

std::string to_uri(const Name& name) {
  if (name.empty()) return "/";
  std::string out;
  static const char* hex = "0123456789ABCDEF";
  for (const std::string& c : name) {
    out.push_back('/');
    if (std::all_of(c.begin(), c.end(), [](char x) { return x == '.'; })) {
      out.append(c.size() + 3, '.');
      continue;
    }
    for (unsigned char x : c) {
      if (unreserved(x)) {
        out.push_back(static_cast<char>(x));
      } else {
        out.push_back('%');
        out.push_back(hex[x >> 4]);
        out.push_back(hex[x & 15]);
      }
    }
  }
  return out;
}

Name name_of_url(std::string_view url) {
  const std::string original(url);
  if (const size_t s = url.find("://"); s != std::string_view::npos) url.remove_prefix(s + 3);
  const size_t end_host = url.find_first_of("/?#");
  std::string_view host = url.substr(0, end_host);
  url = end_host == std::string_view::npos ? std::string_view{} : url.substr(end_host);
  if (const size_t at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
  if (const size_t colon = host.rfind(':'); colon != std::string_view::npos && host.find(']') == std::string_view::npos) {
    host = host.substr(0, colon);
  }
  while (!host.empty() && host.back() == '.') host.remove_suffix(1);  // the root label
  if (host.empty()) throw NameError("URL without a host: `" + original + "`");
  Name name;
  for (size_t end = host.size();;) {
    const size_t dot = host.rfind('.', end - 1);
    const size_t begin = dot == std::string_view::npos ? 0 : dot + 1;
    name.emplace_back(host.substr(begin, end - begin));
    if (dot == std::string_view::npos) break;
    end = dot;
    if (end == 0) {  // a leading '.'
      name.emplace_back();
      break;
    }
  }
  const size_t stop = url.find_first_of("?#");
  std::string_view path = url.substr(0, stop);
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  while (!path.empty()) {
    const size_t slash = path.find('/');
    name.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return name;
}

std::vector<uint8_t> encode_interest(const Name& name, uint32_t nonce, bool can_be_prefix, bool must_be_fresh) {
  const std::vector<uint8_t> name_value = name_wire_bytes(name);
  std::vector<uint8_t> value;
  put_tlv(value, kTlvName, name_value.data(), name_value.size());
  if (can_be_prefix) put_tlv(value, 0x21, nullptr, 0);
  if (must_be_fresh) put_tlv(value, 0x12, nullptr, 0);
  const uint8_t n[4] = {static_cast<uint8_t>(nonce >> 24), static_cast<uint8_t>(nonce >> 16),
                        static_cast<uint8_t>(nonce >> 8), static_cast<uint8_t>(nonce)};
  put_tlv(value, 0x0A, n, 4);
  std::vector<uint8_t> out;
  put_tlv(out, kTlvInterest, value.data(), value.size());
  return out;
}

Name name_of(const uint8_t* packet, const NdnName& parsed) {
  Name name;
  for (int i = 0; i < parsed.count; ++i) {
    name.emplace_back(reinterpret_cast<const char*>(packet + parsed.offset[i]), parsed.length[i]);
  }
  return name;
}

}  // namespace tandem::ndn
