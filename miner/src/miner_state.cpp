#include "crucible/miner/miner_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "crucible/common/file_io.h"
#include "crucible/common/json_fields.h"
#include "crucible/common/safetensors.h"

namespace crucible::miner {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json opt_window(const std::optional<std::uint64_t>& w) { return w ? json(*w) : json(nullptr); }

}  // namespace

Result<StateDir> StateDir::open(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return files::errno_status("create state folder", dir, ec.value());
  fs::path lock = dir / "LOCK";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return files::errno_status("open", lock, errno);
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return failed_precondition("state folder {} is in use by another miner", dir.string());
  }
  StateDir s(fs::absolute(dir), fd);
  // The next generation number: one past the largest present.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    std::string digits = n.starts_with("gen-") ? n.substr(4) : "";
    if (!digits.empty() && digits.size() < 19 && digits.find_first_not_of("0123456789") == std::string::npos) {
      s.next_gen_ = std::max<std::uint64_t>(s.next_gen_, std::stoull(digits) + 1);
    }
  }
  return s;
}

StateDir::StateDir(StateDir&& o) noexcept
    : dir_(std::move(o.dir_)), lock_fd_(std::exchange(o.lock_fd_, -1)), next_gen_(o.next_gen_) {}
StateDir& StateDir::operator=(StateDir&& o) noexcept {
  if (this != &o) {
    if (lock_fd_ >= 0) close(lock_fd_);
    dir_ = std::move(o.dir_);
    lock_fd_ = std::exchange(o.lock_fd_, -1);
    next_gen_ = o.next_gen_;
  }
  return *this;
}
StateDir::~StateDir() {
  if (lock_fd_ >= 0) close(lock_fd_);
}

Result<std::optional<std::pair<fs::path, MinerState>>> StateDir::load(const std::vector<TensorSpec>& specs) const {
  using Out = std::optional<std::pair<fs::path, MinerState>>;
  if (!fs::exists(dir_ / "CURRENT")) return Out();
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes current, files::read_file(dir_ / "CURRENT", 256));
  std::string gen(current.begin(), current.end());
  if (gen.empty() || !gen.starts_with("gen-") || gen.find('/') != std::string::npos) {
    return data_loss("{}/CURRENT names '{}', not a generation", dir_.string(), gen);
  }
  fs::path g = dir_ / gen;
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes text, files::read_file(g / "state.json", 1 << 20));
  json j = json::parse(text.begin(), text.end(), nullptr, false);
  // Strict, as every record a node writes (docs/architecture.md): a missing
  // or mistyped field is data_loss naming it, never a default.
  JsonFields f(j, (g / "state.json").string());
  if (f.get<int>("v") != 1 && f.ok()) return data_loss("{}: not a v1 miner state", (g / "state.json").string());
  MinerState s;
  s.trained_window = f.opt<std::uint64_t>("trained_window");
  s.uploaded_window = f.opt<std::uint64_t>("uploaded_window");
  s.chain.window = f.opt<std::uint64_t>("applied_window");
  s.chain.global_step = f.get<std::uint64_t>("global_step");
  s.inner_steps = f.get<std::uint64_t>("inner_steps");
  const std::string basis_hex = f.get<std::string>("basis");
  if (!f.ok()) return f.status();
  auto basis = from_hex_fixed<32>(basis_hex);
  if (!basis.is_ok()) return data_loss("{}: field 'basis' is not 32 bytes of hex", (g / "state.json").string());
  s.chain.basis = *basis;
  CRUCIBLE_ASSIGN_OR_RETURN(safetensors::File ef, safetensors::read_file(g / "ef.safetensors"));
  for (const auto& spec : specs) {
    const safetensors::TensorView* t = ef.find(spec.name);
    if (t == nullptr || t->shape != spec.shape || t->dtype != safetensors::DType::kF32) {
      return failed_precondition("error feedback in {} does not match the model (tensor {})", g.string(), spec.name);
    }
    std::vector<float> v(static_cast<std::size_t>(spec.numel()));
    std::memcpy(v.data(), t->data.data(), t->data.size());
    s.ef.push_back(std::move(v));
  }
  return Out(std::make_pair(g, std::move(s)));
}

Status StateDir::commit(const MinerState& s, const std::vector<TensorSpec>& specs,
                        const std::function<Status(const fs::path&)>& write_files) {
  const std::string gen = fmt::format("gen-{}", next_gen_++);
  const fs::path g = dir_ / gen;
  std::error_code ec;
  fs::remove_all(g, ec);
  fs::create_directories(g, ec);
  if (ec) return files::errno_status("create", g, ec.value());
  CRUCIBLE_RETURN_IF_ERROR(write_files(g));
  std::vector<safetensors::TensorView> views;
  for (std::size_t i = 0; i < specs.size() && i < s.ef.size(); ++i) {
    views.push_back({specs[i].name, safetensors::DType::kF32, specs[i].shape,
                     ByteSpan(reinterpret_cast<const std::uint8_t*>(s.ef[i].data()), s.ef[i].size() * sizeof(float))});
  }
  CRUCIBLE_RETURN_IF_ERROR(safetensors::write_file(g / "ef.safetensors", views));
  json j = {{"v", 1},
            {"trained_window", opt_window(s.trained_window)},
            {"uploaded_window", opt_window(s.uploaded_window)},
            {"applied_window", opt_window(s.chain.window)},
            {"global_step", s.chain.global_step},
            {"inner_steps", s.inner_steps},
            {"basis", to_hex(s.chain.basis)}};
  std::string text = j.dump(2);
  CRUCIBLE_RETURN_IF_ERROR(files::write_file_atomic(g / "state.json", as_bytes(text)));
  files::sync_directory(g);
  CRUCIBLE_RETURN_IF_ERROR(files::write_file_atomic(dir_ / "CURRENT", as_bytes(gen)));
  // Older generations are no longer needed.
  for (const auto& e : fs::directory_iterator(dir_, ec)) {
    std::string n = e.path().filename().string();
    if (n.starts_with("gen-") && n != gen) fs::remove_all(e.path(), ec);
  }
  return Status::ok();
}

}  // namespace crucible::miner
