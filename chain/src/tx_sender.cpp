#include "crucible/chain/tx_sender.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "crucible/common/log.h"

namespace crucible::chain {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

std::uint64_t bump(std::uint64_t v, std::uint32_t percent) { return std::max(v + 1, v + v * percent / 100); }

}  // namespace

TxSender::TxSender(EthClient& eth, PrivateKey key, std::uint64_t chain_id, TxOptions options)
    : eth_(eth), key_(std::move(key)), address_(key_.address()), chain_id_(chain_id), options_(options) {}

Status TxSender::check_chain_id() {
  if (chain_checked_ || !options_.verify_chain_id) return Status::ok();
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t node_chain, eth_.chain_id());
  if (node_chain != chain_id_) {
    return failed_precondition("configured chain id {} but the node at {} reports {}: refusing to sign", chain_id_,
                               eth_.rpc().options().url, node_chain);
  }
  chain_checked_ = true;
  return Status::ok();
}

SignedTx TxSender::sign_draft(const Draft& d) const {
  if (d.fees.eip1559) {
    Eip1559Tx tx;
    tx.chain_id = chain_id_;
    tx.nonce = d.nonce;
    tx.max_priority_fee = d.fees.max_priority_fee;
    tx.max_fee = d.fees.max_fee;
    tx.gas_limit = d.gas;
    tx.to = d.to;
    tx.value = d.value;
    tx.data = d.data;
    return sign(tx, key_);
  }
  LegacyTx tx;
  tx.chain_id = chain_id_;
  tx.nonce = d.nonce;
  tx.gas_price = d.fees.max_fee;
  tx.gas_limit = d.gas;
  tx.to = d.to;
  tx.value = d.value;
  tx.data = d.data;
  return sign(tx, key_);
}

Result<std::string> TxSender::revert_reason(const Draft& d) {
  auto replay = eth_.call(d.to, d.data, address_);
  if (!replay.is_ok()) return replay.status().message();
  return std::string("reverted (the reason is no longer reproducible by eth_call)");
}

// A node's "insufficient funds" (gas) and subtensor's NotEnoughBalance...
// (a registration's burn, a stake) said as what to do about it.
Status TxSender::with_funds_hint(Status st) const {
  if (st.is_ok()) return st;
  std::string lower = st.message();
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!contains(lower, "insufficient funds") && !contains(lower, "notenoughbalance")) return st;
  return failed_precondition(
      "the account {} cannot pay for the transaction ({}): fund it; on the local chain `crucible chain fund --key "
      "KEYFILE`, on Bittensor a transfer of TAO to this EVM address (docs/chain.md)",
      address_.checksum(), st.message());
}

Result<TxSender::Draft> TxSender::draft(const Address& to, const Bytes& data, std::optional<std::uint64_t> gas_limit,
                                        const U256& value) {
  CRUCIBLE_RETURN_IF_ERROR(check_chain_id());
  Draft d;
  d.to = to;
  d.data = data;
  d.value = value;
  if (gas_limit) {
    d.gas = *gas_limit;
  } else {
    auto estimate = eth_.estimate_gas(address_, to, data);
    if (!estimate.is_ok()) return with_funds_hint(estimate.status());
    d.gas = *estimate + *estimate * options_.gas_margin_percent / 100;
  }
  CRUCIBLE_ASSIGN_OR_RETURN(d.fees, eth_.estimate_fees());
  CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t pending, eth_.pending_nonce(address_));
  d.nonce = std::max(pending, next_nonce_.value_or(0));
  return d;
}

Status TxSender::send_version(const Draft& d, SentTx& out) {
  SignedTx signed_tx = sign_draft(d);
  auto hash = eth_.send_raw(signed_tx.raw);
  if (!hash.is_ok()) {
    const std::string& m = hash.status().message();
    if (contains(m, "already known")) {
      out.hashes.push_back(signed_tx.hash);
      return Status::ok();
    }
    if (contains(m, "chain id") || contains(m, "chainId")) {
      return failed_precondition("the node refused a transaction signed for chain id {}: {}", chain_id_, m);
    }
    return hash.status();
  }
  out.hashes.push_back(*hash);
  log::debug("transaction sent", {{"hash", to_hex(*hash)}, {"nonce", d.nonce}, {"max_fee", d.fees.max_fee}});
  return Status::ok();
}

// No version mined after stuck_after: if the node knows none of them, it
// dropped the transaction (an error, unless the nonce was used meanwhile);
// otherwise a version with higher fees replaces it, up to max_replacements.
Status TxSender::replace_if_stuck(Draft& d, SentTx& out, int& replacements) {
  bool known = false;
  for (const Hash32& h : out.hashes) {
    CRUCIBLE_ASSIGN_OR_RETURN(auto info, eth_.transaction(h));
    known = known || info.has_value();
  }
  if (!known) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::uint64_t latest, eth_.latest_nonce(address_));
    if (latest <= d.nonce) {
      return failed_precondition(
          "transaction {} was dropped by the node: neither pending nor mined. It was signed for chain id {}; "
          "some nodes silently drop transactions for another chain, or evict them from a full pool",
          to_hex(out.hashes.front()), chain_id_);
    }
    return Status::ok();  // the nonce was consumed by a version we did not see mined: look once more next round
  }
  if (replacements >= options_.max_replacements) return Status::ok();
  d.fees.max_fee = bump(d.fees.max_fee, options_.fee_bump_percent);
  d.fees.max_priority_fee = bump(d.fees.max_priority_fee, options_.fee_bump_percent);
  Status r = send_version(d, out);
  if (r.is_ok()) {
    ++replacements;
    log::warn("transaction stuck: replaced with higher fees",
              {{"nonce", d.nonce}, {"replacement", replacements}, {"max_fee", d.fees.max_fee}});
  } else if (!contains(r.message(), "nonce too low")) {
    log::warn("replacement transaction refused", {{"nonce", d.nonce}, {"error", r.message()}});
  }
  return Status::ok();
}

Result<SentTx> TxSender::send(const Address& to, const Bytes& data, std::optional<std::uint64_t> gas_limit,
                              const U256& value) {
  CRUCIBLE_ASSIGN_OR_RETURN(Draft d, draft(to, data, gas_limit, value));
  SentTx out;
  out.nonce = d.nonce;
  Status st = send_version(d, out);
  if (!st.is_ok() && contains(st.message(), "nonce too low")) {
    // Another sender used this key: take the node's view and try once more.
    CRUCIBLE_ASSIGN_OR_RETURN(d.nonce, eth_.pending_nonce(address_));
    out.nonce = d.nonce;
    st = send_version(d, out);
  }
  CRUCIBLE_RETURN_IF_ERROR(with_funds_hint(st));
  next_nonce_ = d.nonce + 1;

  const auto deadline = Clock::now() + options_.receipt_timeout;
  auto replace_at = Clock::now() + options_.stuck_after;
  int replacements = 0;
  while (Clock::now() < deadline) {
    for (const Hash32& h : out.hashes) {
      CRUCIBLE_ASSIGN_OR_RETURN(std::optional<Receipt> r, eth_.receipt(h));
      if (!r) continue;
      out.receipt = *r;
      if (!r->success) {
        CRUCIBLE_ASSIGN_OR_RETURN(std::string reason, revert_reason(d));
        return failed_precondition("transaction {} was mined in block {} but reverted: {}", to_hex(h), r->block_number,
                                   reason);
      }
      return out;
    }
    if (Clock::now() >= replace_at) {
      CRUCIBLE_RETURN_IF_ERROR(replace_if_stuck(d, out, replacements));
      replace_at = Clock::now() + options_.stuck_after;
    }
    std::this_thread::sleep_for(options_.poll_interval);
  }
  return deadline_exceeded("no receipt for transaction {} (nonce {}) within {} ms", to_hex(out.hashes.back()), d.nonce,
                           options_.receipt_timeout.count());
}

Result<Receipt> TxSender::wait(const std::vector<Hash32>& hashes) {
  const auto deadline = Clock::now() + options_.receipt_timeout;
  while (Clock::now() < deadline) {
    for (const Hash32& h : hashes) {
      CRUCIBLE_ASSIGN_OR_RETURN(std::optional<Receipt> r, eth_.receipt(h));
      if (r) return *r;
    }
    std::this_thread::sleep_for(options_.poll_interval);
  }
  return deadline_exceeded("none of {} transaction(s) was mined within {} ms", hashes.size(),
                           options_.receipt_timeout.count());
}

}  // namespace crucible::chain
