// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// One shared state behind the stand-ins for the Bittensor precompiles on the
// local test chain (Metagraph 0x802, Subnet 0x803, Neuron 0x804) and for
// commitments. The stand-ins forward here with the original caller; only
// they may change state, and only the admin (anvil's first dev account)
// creates subnets, sets stake and permits, and names the uid a
// registration replaces (pruning).
//
// Enforced, so client bugs show up locally: registration, validator permit,
// version key, rate limit, duplicate and out-of-range uids, length mismatch,
// commit-reveal on/off, reveal hash (blake2b-256 over SCALE, as subtensor).
// Not reproducible here: mirror-account origin (the caller is mapped to its
// uid directly), stake movements, emissions.
contract SubtensorState {
    address constant ADMIN = 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266;
    address constant METAGRAPH = 0x0000000000000000000000000000000000000802;
    address constant SUBNET = 0x0000000000000000000000000000000000000803;
    address constant NEURON = 0x0000000000000000000000000000000000000804;
    address constant COMMITMENTS = 0x000000000000000000000000000000000000C0C0;

    struct Neuron {
        bytes32 hotkey;
        bytes32 coldkey;
        address evm;
        uint64 stake;
        bool permit;
        uint64 lastUpdate;
        uint16[] weightUids;
        uint16[] weightValues;
        uint64 weightPosts;
        bytes32 commitHash;
        uint64 commitBlock;
        bytes commitment;
    }

    struct Subnet {
        bool exists;
        uint16 maxUids;
        bool commitReveal;
        uint64 versionKey;
        uint64 rateLimit;
        uint16 uidCount;
        uint16 prunePlusOne;  // the uid the next registration replaces, plus one (0: none)
        mapping(uint16 => Neuron) neurons;
        mapping(address => uint16) uidPlusOneOf;
    }

    mapping(uint16 => Subnet) private subnets;

    event NeuronRegistered(uint16 indexed netuid, uint16 uid, bytes32 hotkey, address evm);
    event WeightsSet(uint16 indexed netuid, uint16 indexed uid, uint64 posts);

    modifier onlyAdmin() {
        require(msg.sender == ADMIN, "admin only");
        _;
    }

    modifier from(address standIn) {
        require(msg.sender == standIn, "only the stand-in may call");
        _;
    }

    function subnetOf(uint16 netuid) internal view returns (Subnet storage s) {
        s = subnets[netuid];
        require(s.exists, "subnet does not exist");
    }

    function uidOf(Subnet storage s, address caller) internal view returns (uint16) {
        uint16 p = s.uidPlusOneOf[caller];
        require(p != 0, "caller is not registered on this subnet");
        return p - 1;
    }

    function neuronOf(uint16 netuid, uint16 uid) internal view returns (Neuron storage) {
        Subnet storage s = subnetOf(netuid);
        require(uid < s.uidCount, "uid out of range");
        return s.neurons[uid];
    }

    // ---- admin ----
    function createSubnet(uint16 netuid, uint16 maxUids) external onlyAdmin {
        Subnet storage s = subnets[netuid];
        require(!s.exists, "subnet exists");
        require(maxUids > 0, "maxUids must be positive");
        s.exists = true;
        s.maxUids = maxUids;
    }

    function setSubnetParams(uint16 netuid, bool commitReveal, uint64 versionKey, uint64 rateLimit) external onlyAdmin {
        Subnet storage s = subnetOf(netuid);
        s.commitReveal = commitReveal;
        s.versionKey = versionKey;
        s.rateLimit = rateLimit;
    }

    function setStake(uint16 netuid, uint16 uid, uint64 stake, bool permit) external onlyAdmin {
        Neuron storage n = neuronOf(netuid, uid);
        n.stake = stake;
        n.permit = permit;
    }

    // The chain's pruning choice, as subtensor makes it when a subnet is
    // full: the next registration replaces `uid` (its hotkey, keys, stake,
    // weights and commitment go) and the new hotkey gets the same uid.
    function pruneNext(uint16 netuid, uint16 uid) external onlyAdmin {
        Subnet storage s = subnetOf(netuid);
        require(uid < s.uidCount, "uid out of range");
        s.prunePlusOne = uid + 1;
    }

    // ---- Neuron (0x804) ----
    function burnedRegister(address caller, uint16 netuid, bytes32 hotkey) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        require(s.uidPlusOneOf[caller] == 0, "already registered");
        require(s.prunePlusOne != 0 || s.uidCount < s.maxUids, "subnet is full");
        for (uint16 i = 0; i < s.uidCount; i++) {
            require(s.neurons[i].hotkey != hotkey, "hotkey already registered");
        }
        uint16 uid;
        if (s.prunePlusOne != 0) {
            uid = s.prunePlusOne - 1;
            s.prunePlusOne = 0;
            delete s.uidPlusOneOf[s.neurons[uid].evm];
            delete s.neurons[uid];
        } else {
            uid = s.uidCount++;
        }
        Neuron storage n = s.neurons[uid];
        n.hotkey = hotkey;
        n.coldkey = bytes32(uint256(uint160(caller)));
        n.evm = caller;
        s.uidPlusOneOf[caller] = uid + 1;
        emit NeuronRegistered(netuid, uid, hotkey, caller);
    }

    function checkWeights(Subnet storage s, Neuron storage n, uint16[] calldata uids, uint16[] calldata values,
                          uint64 versionKey) internal view {
        require(n.permit, "no validator permit");
        require(versionKey == s.versionKey, "incorrect version key");
        require(uids.length == values.length, "uids and weights differ in length");
        require(n.weightPosts == 0 || block.number - n.lastUpdate >= s.rateLimit, "weights set too fast (rate limit)");
        for (uint256 i = 0; i < uids.length; i++) {
            require(uids[i] < s.uidCount, "uid out of range");
            for (uint256 j = 0; j < i; j++) {
                require(uids[i] != uids[j], "duplicate uid");
            }
        }
    }

    function store(uint16 netuid, uint16 uid, Neuron storage n, uint16[] calldata uids, uint16[] calldata values) internal {
        n.weightUids = uids;
        n.weightValues = values;
        n.lastUpdate = uint64(block.number);
        n.weightPosts += 1;
        emit WeightsSet(netuid, uid, n.weightPosts);
    }

    function setWeights(address caller, uint16 netuid, uint16[] calldata uids, uint16[] calldata values,
                        uint64 versionKey) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        uint16 uid = uidOf(s, caller);
        Neuron storage n = s.neurons[uid];
        require(!s.commitReveal, "commit-reveal is enabled: use commitWeights");
        checkWeights(s, n, uids, values, versionKey);
        store(netuid, uid, n, uids, values);
    }

    function commitWeights(address caller, uint16 netuid, bytes32 hash) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        require(s.commitReveal, "commit-reveal is disabled: use setWeights");
        Neuron storage n = s.neurons[uidOf(s, caller)];
        require(n.permit, "no validator permit");
        n.commitHash = hash;
        n.commitBlock = uint64(block.number);
    }

    function revealWeights(address caller, uint16 netuid, uint16[] calldata uids, uint16[] calldata values,
                           uint16[] calldata salt, uint64 versionKey) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        require(s.commitReveal, "commit-reveal is disabled: use setWeights");
        uint16 uid = uidOf(s, caller);
        Neuron storage n = s.neurons[uid];
        require(n.commitHash != bytes32(0), "no commit to reveal");
        require(block.number > n.commitBlock, "reveal must come after the commit's block");
        bytes memory scale = abi.encodePacked(n.hotkey, le16(netuid), vec16(uids), vec16(values), vec16(salt), le64(versionKey));
        require(Blake2b.hash256(scale) == n.commitHash, "reveal does not match the commit");
        checkWeights(s, n, uids, values, versionKey);
        n.commitHash = bytes32(0);
        store(netuid, uid, n, uids, values);
    }

    // ---- SCALE helpers ----
    function le16(uint16 v) internal pure returns (bytes2) {
        return bytes2(uint16((v >> 8) | (v << 8)));
    }

    function le64(uint64 v) internal pure returns (bytes memory out) {
        out = new bytes(8);
        for (uint256 i = 0; i < 8; i++) out[i] = bytes1(uint8(v >> (8 * i)));
    }

    function compact(uint256 n) internal pure returns (bytes memory) {
        if (n < 64) return abi.encodePacked(uint8(n << 2));
        require(n < 16384, "vector too long for the stand-in");
        uint16 v = uint16((n << 2) | 1);
        return abi.encodePacked(le16(v));
    }

    function vec16(uint16[] calldata xs) internal pure returns (bytes memory out) {
        out = compact(xs.length);
        for (uint256 i = 0; i < xs.length; i++) out = abi.encodePacked(out, le16(xs[i]));
    }

    // ---- Commitments ----
    function setCommitment(address caller, uint16 netuid, bytes calldata data) external from(COMMITMENTS) {
        require(data.length <= 1024, "commitment longer than 1024 bytes");
        Subnet storage s = subnetOf(netuid);
        s.neurons[uidOf(s, caller)].commitment = data;
    }

    function getCommitment(uint16 netuid, uint16 uid) external view returns (bytes memory) {
        return neuronOf(netuid, uid).commitment;
    }

    // ---- views (Metagraph 0x802, Subnet 0x803, and for tests) ----
    function getUidCount(uint16 netuid) external view returns (uint16) { return subnetOf(netuid).uidCount; }
    function getHotkey(uint16 netuid, uint16 uid) external view returns (bytes32) { return neuronOf(netuid, uid).hotkey; }
    function getColdkey(uint16 netuid, uint16 uid) external view returns (bytes32) { return neuronOf(netuid, uid).coldkey; }
    function getStake(uint16 netuid, uint16 uid) external view returns (uint64) { return neuronOf(netuid, uid).stake; }
    function getValidatorStatus(uint16 netuid, uint16 uid) external view returns (bool) { return neuronOf(netuid, uid).permit; }
    function getLastUpdate(uint16 netuid, uint16 uid) external view returns (uint64) { return neuronOf(netuid, uid).lastUpdate; }
    function getIsActive(uint16 netuid, uint16 uid) external view returns (bool) { neuronOf(netuid, uid); return true; }
    function getCommitRevealWeightsEnabled(uint16 netuid) external view returns (bool) { return subnetOf(netuid).commitReveal; }
    function getWeightsVersionKey(uint16 netuid) external view returns (uint64) { return subnetOf(netuid).versionKey; }
    function getWeightsSetRateLimit(uint16 netuid) external view returns (uint64) { return subnetOf(netuid).rateLimit; }

    function getWeights(uint16 netuid, uint16 uid) external view returns (uint16[] memory, uint16[] memory, uint64) {
        Neuron storage n = neuronOf(netuid, uid);
        return (n.weightUids, n.weightValues, n.weightPosts);
    }

    function getUidOf(uint16 netuid, address evm) external view returns (uint16) {
        return uidOf(subnetOf(netuid), evm);
    }
}

// BLAKE2b-256 through the BLAKE2 F precompile (EIP-152, address 0x09).
library Blake2b {
    function hash256(bytes memory data) internal view returns (bytes32 out) {
        // h = IV with h[0] ^= 0x01010000 ^ outlen(32); lanes little-endian in the precompile's input.
        uint64[8] memory h = [
            uint64(0x6a09e667f3bcc908) ^ 0x01010020, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
            0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179
        ];
        bytes memory state = new bytes(64);
        for (uint256 i = 0; i < 8; i++) writeLe64(state, i * 8, h[i]);
        uint256 blocks = data.length == 0 ? 1 : (data.length + 127) / 128;
        for (uint256 b = 0; b < blocks; b++) {
            bytes memory m = new bytes(128);
            uint256 start = b * 128;
            for (uint256 i = 0; i < 128 && start + i < data.length; i++) m[i] = data[start + i];
            uint256 counter = start + 128 > data.length ? data.length : start + 128;
            bool last = b + 1 == blocks;
            bytes memory input = abi.encodePacked(uint32(12), state, m, le64(uint64(counter)), le64(0), last ? bytes1(0x01) : bytes1(0x00));
            (bool ok, bytes memory result) = address(0x09).staticcall(input);
            require(ok && result.length == 64, "blake2f failed");
            state = result;
        }
        assembly {
            out := mload(add(state, 32))
        }
    }

    function le64(uint64 v) private pure returns (bytes8) {
        uint64 r = 0;
        for (uint256 i = 0; i < 8; i++) r |= ((v >> uint64(8 * i)) & 0xff) << uint64(8 * (7 - i));
        return bytes8(r);
    }

    function writeLe64(bytes memory buf, uint256 offset, uint64 v) private pure {
        for (uint256 i = 0; i < 8; i++) buf[offset + i] = bytes1(uint8(v >> (8 * i)));
    }
}
