#include "crucible/chain/packet_signing.h"

namespace crucible::chain {

Result<Bytes> seal_packet(packet::Packet p, const PrivateKey& key, const packet::Limits& limits) {
  p.signer = key.address().bytes();
  CRUCIBLE_ASSIGN_OR_RETURN(Bytes out, packet::encode_body(p, limits));
  const Hash32 digest = keccak256(out);
  const auto rsv = key.sign(digest).to_rsv();
  out.insert(out.end(), digest.begin(), digest.end());
  out.insert(out.end(), rsv.begin(), rsv.end());
  return out;
}

Result<OpenedPacket> open_packet(ByteSpan bytes, const packet::Limits& limits) {
  CRUCIBLE_ASSIGN_OR_RETURN(packet::Decoded d, packet::decode(bytes, limits));
  OpenedPacket out;
  out.digest = keccak256(bytes.first(d.body_bytes));
  if (out.digest != d.digest) return data_loss("packet digest does not match its contents (corrupted or altered)");
  CRUCIBLE_ASSIGN_OR_RETURN(Signature sig, Signature::from_rsv(d.signature));
  auto recovered = recover_address(out.digest, sig);
  if (!recovered.is_ok()) return unauthenticated("packet signature is invalid: {}", recovered.status().message());
  const Address named(d.packet.signer);
  if (*recovered != named) {
    return unauthenticated("packet is signed by {}, not by the signer it names ({})", recovered->hex(), named.hex());
  }
  out.signer = *recovered;
  out.packet = std::move(d.packet);
  return out;
}

}  // namespace crucible::chain
