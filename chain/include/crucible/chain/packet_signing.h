// Sealing and opening packets (common/packet.h): the trailer is the
// Keccak-256 of the body and the signer's secp256k1 recoverable signature
// of that digest. Opening checks, in order: structure (packet::decode),
// digest (data_loss: the bytes were changed), signature (unauthenticated:
// not signed by the address the packet names). Whether that address is the
// uid's registered key is the validator's check.
#pragma once

#include "crucible/chain/keccak.h"
#include "crucible/chain/keys.h"
#include "crucible/common/packet.h"

namespace crucible::chain {

// Sets p.signer to the key's address, encodes, appends digest and signature.
Result<Bytes> seal_packet(packet::Packet p, const PrivateKey& key, const packet::Limits& limits = {});

struct OpenedPacket {
  packet::Packet packet;
  Address signer;  // recovered, equal to packet.signer
  Hash32 digest{};
};

Result<OpenedPacket> open_packet(ByteSpan bytes, const packet::Limits& limits = {});

}  // namespace crucible::chain
