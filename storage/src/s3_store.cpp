#include "crucible/storage/s3_store.h"

#include <sys/socket.h>

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <boost/property_tree/ptree.hpp>
#include <boost/property_tree/xml_parser.hpp>

#include "crucible/storage/peer_location.h"
#include "crucible/storage/sigv4.h"

namespace crucible::storage {

struct S3Store::Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  Bytes body;
};

struct S3Store::Request {
  std::string method;
  std::string path;  // unencoded, starts with '/'
  std::vector<std::pair<std::string, std::string>> query;
  std::vector<std::pair<std::string, std::string>> headers;  // signed
  ByteSpan body;
  bool write = false;                // use the write credentials
  std::uint64_t max_body = 1 << 20;  // cap on the response body
};

namespace {

constexpr const char* kShaHeader = "x-amz-meta-crucible-sha256";
constexpr std::uint64_t kMaxErrorBody = 64 << 10;

void curl_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct Transfer {
  S3Store::Response* response = nullptr;
  std::uint64_t cap = 0;
  bool overflow = false;
  ByteSpan upload;
  std::size_t uploaded = 0;
  bool refuse_private = false;   // S3Options::refuse_private_addresses
  bool refused_address = false;  // a connection to a private address was refused
};

// Every socket curl opens for a connection, after its own name resolution:
// a peer's host name that resolves to a private address is refused here,
// where no later lookup can change the answer.
curl_socket_t open_socket(void* user, curlsocktype purpose, curl_sockaddr* a) {
  auto* t = static_cast<Transfer*>(user);
  if (t->refuse_private && purpose == CURLSOCKTYPE_IPCXN && is_private_address(&a->addr)) {
    t->refused_address = true;
    return CURL_SOCKET_BAD;
  }
  return socket(a->family, a->socktype, a->protocol);
}

std::size_t on_header(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {
    t->response->headers.clear();  // a new response (after 100 Continue)
    // Error bodies (XML) get their own small cap, whatever cap the caller set for data.
    auto space = line.find(' ');
    if (space != std::string_view::npos && line.size() > space + 1 && line[space + 1] != '2') t->cap = kMaxErrorBody;
    return size * n;
  }
  auto colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    t->response->headers[name] = std::string(value);
  }
  return size * n;
}

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t bytes = size * n;
  if (t->response->body.size() + bytes > t->cap) {
    t->overflow = true;
    return 0;
  }
  t->response->body.insert(t->response->body.end(), data, data + bytes);
  return bytes;
}

std::size_t on_read(char* out, std::size_t size, std::size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::size_t take = std::min(size * n, t->upload.size() - t->uploaded);
  std::memcpy(out, t->upload.data() + t->uploaded, take);
  t->uploaded += take;
  return take;
}

std::string header(const S3Store::Response& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

std::pair<std::string, std::string> xml_error(const Bytes& body) {
  try {
    std::istringstream in(std::string(body.begin(), body.end()));
    boost::property_tree::ptree tree;
    boost::property_tree::read_xml(in, tree);
    return {tree.get<std::string>("Error.Code", ""), tree.get<std::string>("Error.Message", "")};
  } catch (const std::exception&) {
    return {"", ""};
  }
}

Status status_of(const S3Store::Response& r, std::string_view what) {
  if (r.status >= 200 && r.status < 300) return Status::ok();
  auto [code, message] = xml_error(r.body);
  std::string text = fmt::format("{}: HTTP {}{}{}", what, r.status, code.empty() ? "" : " " + code,
                                 message.empty() ? "" : ": " + message.substr(0, 300));
  if (r.status == 404) return not_found("{}", text);
  if (r.status == 401 || code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId" ||
      code == "AuthorizationHeaderMalformed") {
    return unauthenticated("{}", text);
  }
  if (r.status == 403) return permission_denied("{}", text);
  if (code == "BadDigest" || code == "XAmzContentSHA256Mismatch" || code == "InvalidDigest")
    return data_loss("{}", text);
  if (r.status == 412) return unavailable("{} (the object changed while it was read)", text);
  if (r.status == 416) return out_of_range("{}", text);
  if (r.status == 429 || r.status >= 500) return unavailable("{}", text);
  if (r.status == 400) return invalid_argument("{}", text);
  return failed_precondition("{}", text);
}

Result<Sha256> parse_sha_header(const std::string& value) {
  auto b = from_hex_fixed<32>(value);
  if (!b.is_ok()) return data_loss("malformed {} header", kShaHeader);
  return *b;
}

Result<ObjectInfo> info_from(const S3Store::Response& r, std::string_view key, std::uint64_t size) {
  ObjectInfo info;
  info.key = std::string(key);
  info.size = size;
  info.etag = header(r, "etag");
  if (auto lm = header(r, "last-modified"); !lm.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(info.last_modified_ms, parse_http_date(lm));
  }
  if (auto sha = header(r, kShaHeader); !sha.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(Sha256 d, parse_sha_header(sha));
    info.sha256 = d;
  }
  return info;
}

Result<std::uint64_t> parse_u64(std::string_view s, std::string_view what) {
  std::uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return data_loss("malformed {}: '{}'", what, s);
  return v;
}

// "bytes 0-99/1234" -> 1234
Result<std::uint64_t> total_from_content_range(const std::string& cr) {
  auto slash = cr.rfind('/');
  if (!cr.starts_with("bytes ") || slash == std::string::npos) return data_loss("malformed Content-Range '{}'", cr);
  return parse_u64(std::string_view(cr).substr(slash + 1), "Content-Range total");
}

// Runs job(i) for i in [0, count) on up to `parallelism` threads.
template <typename Job>
void parallel_for(std::size_t count, int parallelism, Job job) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < count; i = next++) job(i);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min<int>(parallelism, static_cast<int>(count)); ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
}

}  // namespace

Result<std::int64_t> parse_http_date(std::string_view text) {
  std::tm tm{};
  std::string s(text);
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  int ms = 0;
  if (end == nullptr || *end != '\0') {
    tm = {};
    end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
    if (end == nullptr) return data_loss("unparseable date '{}'", text);
    if (*end == '.') {
      ++end;
      int digits = 0;
      while (*end >= '0' && *end <= '9') {
        if (digits < 3) ms = ms * 10 + (*end - '0');
        ++digits;
        ++end;
      }
      for (; digits < 3; ++digits) ms *= 10;
    }
    if (*end != 'Z' || end[1] != '\0') return data_loss("unparseable date '{}'", text);
  }
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
}

class S3Store::HandlePool {
 public:
  static constexpr std::size_t kMaxIdle = 16;  // >= the parallel ranges/parts of one transfer
  ~HandlePool() {
    for (CURL* c : idle_) curl_easy_cleanup(c);
  }
  CURL* take() {
    {
      std::lock_guard lk(mu_);
      if (!idle_.empty()) {
        CURL* c = idle_.back();
        idle_.pop_back();
        return c;
      }
    }
    return curl_easy_init();
  }
  // curl_easy_reset drops every option but keeps the handle's live
  // connections, DNS and TLS session caches.
  void give(CURL* c) {
    curl_easy_reset(c);
    std::lock_guard lk(mu_);
    if (idle_.size() < kMaxIdle) {
      idle_.push_back(c);
      return;
    }
    curl_easy_cleanup(c);
  }

 private:
  std::mutex mu_;
  std::vector<CURL*> idle_;
};

S3Store::S3Store(S3Options options, RetryPolicy policy)
    : ObjectStore(policy), handles_(std::make_unique<HandlePool>()), options_(std::move(options)) {}
S3Store::~S3Store() = default;

Result<std::unique_ptr<S3Store>> S3Store::open(S3Options options, RetryPolicy policy) {
  curl_init_once();
  if (options.bucket.empty()) return invalid_argument("s3: bucket is empty");
  if (options.part_size < (5ull << 20)) return invalid_argument("s3: part_size must be at least 5 MiB (S3's minimum)");
  if (options.parallelism < 1 || options.parallelism > 64)
    return invalid_argument("s3: parallelism must be in [1, 64]");
  while (!options.prefix.empty() && options.prefix.back() == '/') options.prefix.pop_back();
  if (!options.prefix.empty()) CRUCIBLE_RETURN_IF_ERROR(validate_key(options.prefix).with_context("s3 prefix"));
  std::unique_ptr<S3Store> s(new S3Store(std::move(options), policy));
  std::string endpoint = s->options_.endpoint.empty() ? fmt::format("https://s3.{}.amazonaws.com", s->options_.region)
                                                      : s->options_.endpoint;
  while (endpoint.ends_with("/")) endpoint.pop_back();
  auto scheme_end = endpoint.find("://");
  if (scheme_end == std::string::npos) return invalid_argument("s3: endpoint '{}' has no scheme", endpoint);
  std::string scheme = endpoint.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") return invalid_argument("s3: endpoint scheme must be http or https");
  std::string host = endpoint.substr(scheme_end + 3);
  if (host.empty() || host.find('/') != std::string::npos) {
    return invalid_argument("s3: endpoint '{}' must be scheme://host[:port]", endpoint);
  }
  if (s->options_.path_style) {
    s->host_ = host;
    s->base_path_ = "/" + s->options_.bucket;
  } else {
    s->host_ = s->options_.bucket + "." + host;
  }
  s->scheme_host_ = scheme + "://" + s->host_;
  return s;
}

std::string S3Store::describe() const { return fmt::format("s3://{}/{}", options_.bucket, options_.prefix); }

std::string S3Store::object_path(std::string_view key) const {
  std::string p = base_path_ + "/";
  if (!options_.prefix.empty()) p += options_.prefix + "/";
  return p + std::string(key);
}

// The request's method on a curl handle: HEAD without a body, PUT and POST
// with `body` (read from t.upload), anything else but GET by name.
static void set_method(CURL* curl, const std::string& method, ByteSpan body, Transfer& t) {
  if (method == "HEAD") {
    curl_easy_setopt(curl, CURLOPT_NOBODY, 1L);
  } else if (method == "PUT") {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(curl, CURLOPT_READDATA, &t);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method == "POST") {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, reinterpret_cast<const char*>(body.data()));
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
}

Result<S3Store::Response> S3Store::send(const Request& req) const {
  const S3Credentials& creds = req.write ? options_.write : options_.read;
  std::string payload_hash =
      sha256_hex(std::string_view(reinterpret_cast<const char*>(req.body.data()), req.body.size()));
  std::string amz_date = amz_date_now();

  SigV4Request sig;
  sig.method = req.method;
  sig.host = host_;
  sig.path = req.path;
  sig.query = req.query;
  sig.headers = req.headers;
  sig.headers.emplace_back("x-amz-date", amz_date);
  sig.headers.emplace_back("x-amz-content-sha256", payload_hash);
  if (!creds.session_token.empty()) sig.headers.emplace_back("x-amz-security-token", creds.session_token);
  sig.payload_sha256 = payload_hash;

  std::string url = scheme_host_ + uri_encode(req.path, true);
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : req.query) q.emplace_back(uri_encode(k, false), uri_encode(v, false));
  std::sort(q.begin(), q.end());
  for (std::size_t i = 0; i < q.size(); ++i) url += (i == 0 ? "?" : "&") + q[i].first + "=" + q[i].second;

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, ("Host: " + host_).c_str());
  for (const auto& [k, v] : sig.headers) headers = curl_slist_append(headers, (k + ": " + v).c_str());
  if (!creds.empty()) {
    headers = curl_slist_append(
        headers, ("Authorization: " + sigv4_authorization(sig, creds, options_.region, amz_date)).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
  headers = curl_slist_append(headers, "Content-Type:");

  Response response;
  Transfer t;
  t.response = &response;
  t.cap = req.max_body;
  t.upload = req.body;
  t.refuse_private = options_.refuse_private_addresses;
  CURL* curl = handles_->take();
  if (curl == nullptr) {
    curl_slist_free_all(headers);
    return internal_error("curl_easy_init failed");
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout.count()));
  if (options_.low_speed_bytes_per_s > 0) {
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, static_cast<long>(options_.low_speed_bytes_per_s));
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.low_speed_time.count()));
  }
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_socket);
  curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &t);
  set_method(curl, req.method, req.body, t);
  CURLcode rc = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &response.status);
  handles_->give(curl);
  curl_slist_free_all(headers);

  std::string what = fmt::format("s3 {} {}", req.method, req.path);
  if (t.overflow) {
    return resource_exhausted("{}: response body exceeds the cap of {} bytes", what, req.max_body);
  }
  if (t.refused_address) {
    return permission_denied("{}: the endpoint {} resolves to a private address", what, host_);
  }
  if (rc == CURLE_OPERATION_TIMEDOUT) return deadline_exceeded("{}: {}", what, curl_easy_strerror(rc));
  if (rc != CURLE_OK) return unavailable("{}: {}", what, curl_easy_strerror(rc));
  return response;
}

Status S3Store::create_bucket() {
  Request req;
  req.method = "PUT";
  req.path = base_path_.empty() ? "/" : base_path_;
  req.write = true;
  std::string body;
  if (options_.region != "us-east-1" && options_.region != "auto") {
    body = fmt::format(
        "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>{}"
        "</LocationConstraint></CreateBucketConfiguration>",
        options_.region);
  }
  req.body = as_bytes(body);
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(req));
  if (r.status == 409 && xml_error(r.body).first == "BucketAlreadyOwnedByYou") return Status::ok();
  return status_of(r, "s3 create bucket " + options_.bucket);
}

Status S3Store::do_put(std::string_view key, ByteSpan data, const Sha256& sha256) {
  std::string path = object_path(key);
  if (data.size() >= options_.multipart_threshold) return put_multipart(path, data, sha256);
  Request req;
  req.method = "PUT";
  req.path = path;
  req.body = data;
  req.write = true;
  req.max_body = kMaxErrorBody;
  req.headers = {{kShaHeader, to_hex(sha256, false)}};
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(req));
  return status_of(r, "s3 put " + std::string(key));
}

Status S3Store::put_multipart(const std::string& path, ByteSpan data, const Sha256& sha256) {
  Request init;
  init.method = "POST";
  init.path = path;
  init.query = {{"uploads", ""}};
  init.headers = {{kShaHeader, to_hex(sha256, false)}};
  init.write = true;
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(init));
  CRUCIBLE_RETURN_IF_ERROR(status_of(r, "s3 create multipart upload " + path));
  std::string upload_id;
  try {
    std::istringstream in(std::string(r.body.begin(), r.body.end()));
    boost::property_tree::ptree tree;
    boost::property_tree::read_xml(in, tree);
    upload_id = tree.get<std::string>("InitiateMultipartUploadResult.UploadId");
  } catch (const std::exception& e) {
    return data_loss("s3 create multipart upload {}: unreadable reply: {}", path, e.what());
  }

  std::size_t parts = (data.size() + options_.part_size - 1) / options_.part_size;
  std::vector<std::string> etags(parts);
  std::vector<Status> results(parts);
  parallel_for(parts, options_.parallelism, [&](std::size_t i) {
    std::uint64_t off = i * options_.part_size;
    Request part;
    part.method = "PUT";
    part.path = path;
    part.query = {{"partNumber", std::to_string(i + 1)}, {"uploadId", upload_id}};
    part.body = data.subspan(off, std::min<std::uint64_t>(options_.part_size, data.size() - off));
    part.write = true;
    part.max_body = kMaxErrorBody;
    auto resp = send(part);
    results[i] = resp.is_ok() ? status_of(*resp, fmt::format("s3 upload part {} of {}", i + 1, path)) : resp.status();
    if (resp.is_ok()) etags[i] = header(*resp, "etag");
  });

  Status failed;
  for (const auto& s : results) {
    if (!s.is_ok()) {
      failed = s;
      break;
    }
  }
  if (failed.is_ok()) {
    std::string xml = "<CompleteMultipartUpload>";
    for (std::size_t i = 0; i < parts; ++i) {
      xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etags[i]);
    }
    xml += "</CompleteMultipartUpload>";
    Request done;
    done.method = "POST";
    done.path = path;
    done.query = {{"uploadId", upload_id}};
    done.body = as_bytes(xml);
    done.write = true;
    auto resp = send(done);
    failed = resp.is_ok() ? status_of(*resp, "s3 complete multipart upload " + path) : resp.status();
    // S3 may answer 200 and put the error in the body.
    if (failed.is_ok() && !xml_error(resp->body).first.empty()) {
      failed = unavailable("s3 complete multipart upload {}: {}", path, xml_error(resp->body).first);
    }
    if (failed.is_ok()) return Status::ok();
  }
  Request abort;
  abort.method = "DELETE";
  abort.path = path;
  abort.query = {{"uploadId", upload_id}};
  abort.write = true;
  (void)send(abort);  // best effort: the parts would otherwise linger (and cost)
  return failed;
}

Result<Fetched> S3Store::do_get(std::string_view key, std::uint64_t max_bytes) {
  std::string path = object_path(key);
  // The first range tells the size; small objects need no second request.
  Request first;
  first.method = "GET";
  first.path = path;
  std::uint64_t first_len = std::min<std::uint64_t>(options_.part_size, std::max<std::uint64_t>(max_bytes, 1));
  first.headers = {{"range", fmt::format("bytes=0-{}", first_len - 1)}};
  first.max_body = first_len;
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(first));
  if (r.status == 416) {  // an empty object has no byte 0
    Request plain;
    plain.method = "GET";
    plain.path = path;
    plain.max_body = max_bytes;
    CRUCIBLE_ASSIGN_OR_RETURN(r, send(plain));
    CRUCIBLE_RETURN_IF_ERROR(status_of(r, "s3 get " + std::string(key)));
    CRUCIBLE_ASSIGN_OR_RETURN(ObjectInfo info, info_from(r, key, r.body.size()));
    return Fetched{std::move(r.body), std::move(info)};
  }
  CRUCIBLE_RETURN_IF_ERROR(status_of(r, "s3 get " + std::string(key)));
  std::uint64_t total = r.body.size();
  if (r.status == 206) {
    CRUCIBLE_ASSIGN_OR_RETURN(total, total_from_content_range(header(r, "content-range")));
  }
  if (total > max_bytes) {
    return resource_exhausted("s3 get {}: object of {} bytes exceeds the cap of {}", key, total, max_bytes);
  }
  CRUCIBLE_ASSIGN_OR_RETURN(ObjectInfo info, info_from(r, key, total));
  Fetched f{std::move(r.body), std::move(info)};
  if (f.data.size() >= total) return f;

  // The rest in parallel ranges, each pinned to the first response's ETag.
  std::uint64_t done = f.data.size();
  Bytes whole = zeroed_buffer(total);
  std::copy(f.data.begin(), f.data.end(), whole.begin());
  f.data = std::move(whole);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
  for (std::uint64_t off = done; off < total; off += options_.part_size) {
    ranges.emplace_back(off, std::min<std::uint64_t>(options_.part_size, total - off));
  }
  std::vector<Status> results(ranges.size());
  parallel_for(ranges.size(), options_.parallelism, [&](std::size_t i) {
    auto [off, len] = ranges[i];
    Request part;
    part.method = "GET";
    part.path = path;
    part.headers = {{"range", fmt::format("bytes={}-{}", off, off + len - 1)}};
    if (!f.info.etag.empty()) part.headers.emplace_back("if-match", f.info.etag);
    part.max_body = len;
    auto resp = send(part);
    Status st = resp.is_ok() ? status_of(*resp, "s3 get range of " + std::string(key)) : resp.status();
    if (st.is_ok() && resp->body.size() != len) st = data_loss("s3 get {}: short range at {}", key, off);
    if (st.is_ok()) std::copy(resp->body.begin(), resp->body.end(), f.data.begin() + static_cast<std::ptrdiff_t>(off));
    results[i] = st;
  });
  for (const auto& s : results) CRUCIBLE_RETURN_IF_ERROR(s);
  return f;
}

Result<Bytes> S3Store::do_get_range(std::string_view key, std::uint64_t offset, std::uint64_t length) {
  if (length == 0) return Bytes{};
  Request req;
  req.method = "GET";
  req.path = object_path(key);
  req.headers = {{"range", fmt::format("bytes={}-{}", offset, offset + length - 1)}};
  req.max_body = length;
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(req));
  CRUCIBLE_RETURN_IF_ERROR(status_of(r, "s3 get range " + std::string(key)));
  if (r.status == 200 && r.body.size() > length) return data_loss("s3 get range {}: the server ignored the range", key);
  return std::move(r.body);
}

Result<ObjectInfo> S3Store::do_head(std::string_view key) {
  Request req;
  req.method = "HEAD";
  req.path = object_path(key);
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(req));
  CRUCIBLE_RETURN_IF_ERROR(status_of(r, "s3 head " + std::string(key)));
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t size, parse_u64(header(r, "content-length"), "Content-Length"));
  return info_from(r, key, size);
}

Result<ListPage> S3Store::do_list(std::string_view prefix, const std::optional<std::string>& token,
                                  std::size_t max_keys) {
  std::string full_prefix = options_.prefix.empty() ? std::string(prefix) : options_.prefix + "/" + std::string(prefix);
  Request req;
  req.method = "GET";
  req.path = base_path_.empty() ? "/" : base_path_;
  req.query = {{"list-type", "2"}, {"prefix", full_prefix}, {"max-keys", std::to_string(max_keys)}};
  if (token) req.query.emplace_back("continuation-token", *token);
  req.max_body = 8u << 20;
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(req));
  CRUCIBLE_RETURN_IF_ERROR(status_of(r, "s3 list " + full_prefix));
  ListPage page;
  try {
    std::istringstream in(std::string(r.body.begin(), r.body.end()));
    boost::property_tree::ptree tree;
    boost::property_tree::read_xml(in, tree);
    const auto& result = tree.get_child("ListBucketResult");
    std::size_t strip = options_.prefix.empty() ? 0 : options_.prefix.size() + 1;
    for (const auto& [name, node] : result) {
      if (name != "Contents") continue;
      std::string key = node.get<std::string>("Key");
      if (key.size() < strip) return data_loss("s3 list: key '{}' outside the prefix", key);
      ObjectInfo info;
      info.key = key.substr(strip);
      CRUCIBLE_ASSIGN_OR_RETURN(info.size, parse_u64(node.get<std::string>("Size"), "Size"));
      CRUCIBLE_ASSIGN_OR_RETURN(info.last_modified_ms, parse_http_date(node.get<std::string>("LastModified")));
      info.etag = node.get<std::string>("ETag", "");
      page.objects.push_back(std::move(info));
      if (page.objects.size() > max_keys) return data_loss("s3 list: more keys than asked for");
    }
    if (result.get<std::string>("IsTruncated", "false") == "true") {
      page.next = result.get<std::string>("NextContinuationToken", "");
      if (page.next->empty()) return data_loss("s3 list: truncated page without a continuation token");
    }
  } catch (const boost::property_tree::ptree_error& e) {
    return data_loss("s3 list {}: unreadable reply: {}", full_prefix, e.what());
  }
  return page;
}

Status S3Store::do_remove(std::string_view key) {
  Request req;
  req.method = "DELETE";
  req.path = object_path(key);
  req.write = true;
  req.max_body = kMaxErrorBody;
  CRUCIBLE_ASSIGN_OR_RETURN(Response r, send(req));
  if (r.status == 404) return Status::ok();
  return status_of(r, "s3 remove " + std::string(key));
}

}  // namespace crucible::storage
