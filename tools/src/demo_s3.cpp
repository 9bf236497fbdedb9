#include "crucible/cli/demo_s3.h"

#include "crucible/common/child_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "crucible/storage/s3_store.h"

namespace crucible::cli {

namespace fs = std::filesystem;

namespace {

std::string random_hex(std::size_t bytes) {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string out;
  for (std::size_t i = 0; i < bytes; ++i) out += fmt::format("{:02x}", static_cast<unsigned>(in.get()) & 0xff);
  return out;
}

int shell(const std::string& cmd) { return std::system(cmd.c_str()); }

}  // namespace

Result<std::unique_ptr<DemoS3>> DemoS3::start(const fs::path& run, const fs::path& log_dir) {
  std::unique_ptr<DemoS3> s(new DemoS3());
  s->ceph_dir_ = run / "ceph";
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint16_t port, free_loopback_port());
  CRUCIBLE_ASSIGN_OR_RETURN(const std::uint16_t mon_port, free_loopback_port());
  s->endpoint_ = fmt::format("http://127.0.0.1:{}", port);
  const std::string script = std::string(CRUCIBLE_SOURCE_DIR) + "/scripts/s3/start_s3.sh";
  const int rc = shell(fmt::format("CEPH_DIR='{}' CRUCIBLE_S3_PORT={} CRUCIBLE_S3_MON_PORT={} bash '{}' > '{}' 2>&1",
                                   s->ceph_dir_.string(), port, mon_port, script, (log_dir / "s3.log").string()));
  if (rc != 0) {
    return unavailable("the S3 server (Ceph radosgw) did not start; see {}", (log_dir / "s3.log").string());
  }
  return s;
}

DemoS3::~DemoS3() {
  if (ceph_dir_.empty()) return;
  shell(fmt::format("CEPH_DIR='{}' bash '{}/scripts/s3/stop_s3.sh' > /dev/null 2>&1", ceph_dir_.string(),
                    CRUCIBLE_SOURCE_DIR));
}

Result<storage::StorageOptions> DemoS3::user(const std::string& name) {
  const std::string conf = (ceph_dir_ / "ceph.conf").string();
  const std::string write_id = "W" + random_hex(8), write_secret = random_hex(20);
  const std::string read_id = "R" + random_hex(8), read_secret = random_hex(20);
  if (shell(fmt::format("radosgw-admin -c '{}' user create --uid='{}' --display-name='{}' --access-key={} "
                        "--secret-key={} > /dev/null 2>&1",
                        conf, name, name, write_id, write_secret)) != 0 ||
      shell(fmt::format("radosgw-admin -c '{}' subuser create --uid='{}' --subuser='{}:read' --access=read "
                        "--key-type=s3 --access-key={} --secret-key={} > /dev/null 2>&1",
                        conf, name, name, read_id, read_secret)) != 0) {
    return unavailable("radosgw-admin could not create the S3 user for {}", name);
  }
  storage::StorageOptions o;
  o.write_access_key_id = write_id;
  o.write_secret_access_key = write_secret;
  o.read_access_key_id = read_id;
  o.read_secret_access_key = read_secret;
  return bucket(o, "crucible-" + name);
}

Result<storage::StorageOptions> DemoS3::bucket(storage::StorageOptions user, const std::string& bucket) {
  storage::S3Options o;
  o.bucket = bucket;
  o.endpoint = endpoint_;
  o.write = user.write_credentials();
  o.read = user.read_credentials();
  CRUCIBLE_ASSIGN_OR_RETURN(auto store, storage::S3Store::open(o));
  CRUCIBLE_RETURN_IF_ERROR(store->create_bucket().with_context("bucket " + o.bucket));
  user.url = fmt::format("s3://{}?endpoint={}&region=us-east-1&style=path", bucket, endpoint_);
  return user;
}

Result<std::string> DemoS3::storage_section(const std::string& name) {
  CRUCIBLE_ASSIGN_OR_RETURN(const storage::StorageOptions o, user(name));
  return fmt::format(R"([storage]
url = "{}"
write_access_key_id = "{}"
write_secret_access_key = "{}"
read_access_key_id = "{}"
read_secret_access_key = "{}"
)",
                     o.url, o.write_access_key_id, o.write_secret_access_key, o.read_access_key_id,
                     o.read_secret_access_key);
}

}  // namespace crucible::cli
