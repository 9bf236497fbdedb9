// Object store throughput: crucible's put/get against the curl command line
// moving the same bytes to the same server in the same run, as a ratio.
//
//   storage_bench --s3-endpoint http://127.0.0.1:7480 [--sizes 1,16,64,256] [--repeat 3]
//
// Backends: LocalStore (a temp dir; baseline `curl -T file:///...` and
// `curl file:///...`) and S3Store (baseline `curl --aws-sigv4` with
// UNSIGNED-PAYLOAD, which skips the payload hash crucible computes and sends).
// Prints one row per backend, operation and size: MB/s of both and
// crucible/curl. Run by bench/run_storage.sh (which starts the S3 server).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "crucible/storage/local_store.h"
#include "crucible/storage/s3_store.h"

namespace {

using namespace crucible;
using namespace crucible::storage;
using Clock = std::chrono::steady_clock;

double seconds_of(const std::function<bool()>& f, int repeat, bool& ok) {
  std::vector<double> times;
  ok = true;
  for (int i = 0; i < repeat; ++i) {
    auto t0 = Clock::now();
    ok = ok && f();
    times.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];  // median
}

bool sh(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }

void row(const char* backend, const char* op, std::size_t mb, double ours, double curl) {
  double ours_mbs = static_cast<double>(mb) / ours, curl_mbs = static_cast<double>(mb) / curl;
  fmt::print("| {:<5} | {:<3} | {:>4} MB | {:>9.1f} | {:>9.1f} | {:>5.2f}x |\n", backend, op, mb, ours_mbs, curl_mbs,
             ours_mbs / curl_mbs);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint;
  std::vector<std::size_t> sizes = {1, 16, 64, 256};
  int repeat = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--s3-endpoint") endpoint = argv[i + 1];
    if (a == "--repeat") repeat = std::atoi(argv[i + 1]);
    if (a == "--sizes") {
      sizes.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) sizes.push_back(std::stoul(t));
    }
  }
  auto tmp = std::filesystem::temp_directory_path() / fmt::format("crucible-bench-{}", getpid());
  std::filesystem::create_directories(tmp);
  auto local = LocalStore::open(tmp / "store").value();
  std::unique_ptr<S3Store> s3;
  if (!endpoint.empty()) {
    S3Options o;
    o.bucket = "crucible-bench";
    o.endpoint = endpoint;
    o.read = o.write = {"TESTKEY", Secret("TESTSECRET"), ""};
    s3 = S3Store::open(o).value();
    if (!s3->create_bucket().is_ok()) {
      fmt::print(stderr, "cannot create the bench bucket at {}\n", endpoint);
      return 1;
    }
  }

  fmt::print("| store | op  | size    | crucible MB/s | curl MB/s | ratio |\n|---|---|---|---|---|---|\n");
  for (std::size_t mb : sizes) {
    Bytes data(mb << 20);
    std::mt19937_64 rng(mb);
    for (std::size_t i = 0; i < data.size(); i += 8) {
      std::uint64_t v = rng();
      std::memcpy(data.data() + i, &v, std::min<std::size_t>(8, data.size() - i));
    }
    std::string src = (tmp / "src.bin").string();
    std::ofstream(src, std::ios::binary)
        .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    bool ok1 = false, ok2 = false;
    std::string key = fmt::format("bench/{}mb", mb);

    double put = seconds_of([&] { return local->put(key, data).is_ok(); }, repeat, ok1);
    double cput = seconds_of(
        [&] { return sh(fmt::format("curl -s -T {} file://{}/curl-{}mb", src, tmp.string(), mb)); }, repeat, ok2);
    if (ok1 && ok2) row("local", "put", mb, put, cput);
    double get = seconds_of([&] { return local->get(key, data.size()).is_ok(); }, repeat, ok1);
    double cget = seconds_of(
        [&] { return sh(fmt::format("curl -s -o /dev/null file://{}/curl-{}mb", tmp.string(), mb)); }, repeat, ok2);
    if (ok1 && ok2) row("local", "get", mb, get, cget);

    if (s3) {
      std::string auth =
          "--aws-sigv4 aws:amz:us-east-1:s3 --user TESTKEY:TESTSECRET -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD'";
      std::string url = fmt::format("{}/crucible-bench/curl-{}mb", endpoint, mb);
      double sput = seconds_of([&] { return s3->put(key, data).is_ok(); }, repeat, ok1);
      double scput = seconds_of([&] { return sh(fmt::format("curl -sf --max-time 300 {} -T {} {}", auth, src, url)); },
                                repeat, ok2);
      if (ok1 && ok2) row("s3", "put", mb, sput, scput);
      double sget = seconds_of([&] { return s3->get(key, data.size()).is_ok(); }, repeat, ok1);
      double scget = seconds_of(
          [&] { return sh(fmt::format("curl -sf --max-time 300 {} -o /dev/null {}", auth, url)); }, repeat, ok2);
      if (ok1 && ok2) row("s3", "get", mb, sget, scget);
      (void)s3->remove(key);
      sh(fmt::format("curl -sf {} -X DELETE {} >/dev/null", auth, url));
    }
    std::filesystem::remove(tmp / fmt::format("curl-{}mb", mb));
    (void)local->remove(key);
  }
  std::filesystem::remove_all(tmp);
  return 0;
}
