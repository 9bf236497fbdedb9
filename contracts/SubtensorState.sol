// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// One shared state behind the stand-ins for the Bittensor precompiles on the
// local test chain (Metagraph 0x802, Subnet 0x803, Neuron 0x804, StorageQuery
// 0x807, Proxy 0x80b) and for the Commitments pallet. The stand-ins forward
// here with the original caller; only they may change state, and only the
// admin (anvil's first dev account) creates subnets, sets hyperparameters
// and stake, and names the uid a registration replaces (pruning).
//
// Each rule is subtensor's, read from its source (opentensor/subtensor at
// 14bc6f9; paths below are in that repository), and refuses with the
// error name subtensor uses, as its precompiles report it: "dispatch
// execution failed: <Error>" (precompiles/src/extensions.rs). The origin of
// every call is the caller's mirror account blake2b-256("evm:" ++ address)
// (runtime/src/lib.rs, HashedAddressMapping), as on the chain.
//
// Not modelled (docs/chain.md lists them): balances move only through
// anvil (the registration burn and proxy deposit are checked against the
// caller's balance, not taken), stake is set by the admin (no staking
// precompile, no alpha price: getStake is the hotkey's stake as set),
// emissions, the subnet owner's exemptions, calls through the proxy other
// than Commitments.set_commitment.
contract SubtensorState {
    address constant ADMIN = 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266;
    address constant METAGRAPH = 0x0000000000000000000000000000000000000802;
    address constant SUBNET = 0x0000000000000000000000000000000000000803;
    address constant NEURON = 0x0000000000000000000000000000000000000804;
    address constant PROXY = 0x000000000000000000000000000000000000080b;
    address constant STAKING = 0x0000000000000000000000000000000000000805;

    struct Neuron {
        bytes32 hotkey;
        bytes32 coldkey;
        uint64 lastUpdate;
        uint64 prevStake;   // stake at the start of stakeEpoch (validator permits use it)
        uint64 stakeEpoch;  // the subnet epoch of the last stake change
        uint16[] weightUids;
        uint16[] weightValues;
        uint64 weightPosts;
    }

    struct Commit {
        bytes32 hash;
        uint64 epoch;
    }

    struct Subnet {
        bool exists;
        uint16 maxUids;
        uint16 uidCount;
        uint16 prunePlusOne;  // the uid the next registration replaces, plus one (0: none)
        // Hyperparameters (pallets/subtensor/src/lib.rs storage items).
        bool commitReveal;         // CommitRevealWeightsEnabled
        bool registrationAllowed;  // NetworkRegistrationAllowed
        uint16 tempo;              // Tempo
        uint16 minAllowedWeights;  // MinAllowedWeights
        uint16 maxWeightsLimit;    // MaxWeightsLimit
        uint16 maxValidators;      // MaxAllowedValidators
        uint64 versionKey;         // WeightsVersionKey
        uint64 rateLimit;          // WeightsSetRateLimit
        uint64 revealPeriod;       // RevealPeriodEpochs
        uint64 burn;               // Burn (rao)
        uint64 burnIncreaseMille;  // BurnIncreaseMult x 1000
        // Epochs (coinbase/run_coinbase.rs): one fires when block - LastEpochBlock >= tempo.
        uint64 anchorBlock;
        uint64 anchorIndex;
        mapping(uint16 => Neuron) neurons;
        mapping(bytes32 => uint16) uidPlusOneOf;  // hotkey -> uid + 1 (Uids)
        mapping(bytes32 => Commit[]) commits;     // WeightCommits (who)
        mapping(bytes32 => bytes) commitmentOf;   // Commitments.CommitmentOf, SCALE Registration
        mapping(bytes32 => uint64) usedSpace;     // Commitments.UsedSpaceOf
        mapping(bytes32 => uint64) usedSpaceEpoch;
    }

    struct ProxyDef {
        bytes32 delegate;
        uint8 proxyType;
        uint32 delay;
    }

    mapping(uint16 => Subnet) private subnets;
    mapping(bytes32 => uint64) private hotkeyStake;  // rao, summed over subnets
    mapping(bytes32 => ProxyDef[]) private proxies;  // Proxy.Proxies (real -> delegates)
    uint64 private stakeThreshold;                   // StakeThreshold (a global value)

    event NeuronRegistered(uint16 indexed netuid, uint16 uid, bytes32 hotkey);
    event WeightsSet(uint16 indexed netuid, uint16 indexed uid, uint64 posts);

    modifier onlyAdmin() {
        require(msg.sender == ADMIN, "admin only");
        _;
    }

    modifier from(address standIn) {
        require(msg.sender == standIn, "only the stand-in may call");
        _;
    }

    function fail(string memory name) internal pure {
        revert(string.concat("dispatch execution failed: ", name));
    }

    function mirror(address caller) public view returns (bytes32) {
        return Blake2b.hash256(abi.encodePacked("evm:", caller));
    }

    function subnetOf(uint16 netuid) internal view returns (Subnet storage s) {
        s = subnets[netuid];
        if (!s.exists) fail("SubnetNotExists");
    }

    function neuronOf(uint16 netuid, uint16 uid) internal view returns (Neuron storage) {
        Subnet storage s = subnetOf(netuid);
        require(uid < s.uidCount, "uid out of range");
        return s.neurons[uid];
    }

    // ---- epochs ----
    function epochIndex(Subnet storage s) internal view returns (uint64) {
        if (s.tempo == 0) return s.anchorIndex;
        return s.anchorIndex + (uint64(block.number) - s.anchorBlock) / s.tempo;
    }

    function lastEpochBlock(Subnet storage s) internal view returns (uint64) {
        if (s.tempo == 0) return s.anchorBlock;
        return s.anchorBlock + ((uint64(block.number) - s.anchorBlock) / s.tempo) * s.tempo;
    }

    // ---- admin ----
    // A new subnet as subnets/subnet.rs init_new_network sets one up: 256
    // uids, 64 validators, min allowed weights 1, registration open.
    function createSubnet(uint16 netuid, uint16 maxUids) external onlyAdmin {
        Subnet storage s = subnets[netuid];
        require(!s.exists, "subnet exists");
        require(maxUids > 0, "maxUids must be positive");
        s.exists = true;
        s.maxUids = maxUids;
        s.registrationAllowed = true;
        s.tempo = 360;
        s.minAllowedWeights = 1;
        s.maxWeightsLimit = 65535;
        s.maxValidators = 64;
        s.rateLimit = 100;
        s.revealPeriod = 1;
        s.commitReveal = true;
        s.burnIncreaseMille = 1000;
        s.anchorBlock = uint64(block.number);
    }

    // Hyperparameters by name, as subtensor's admin calls set them.
    function setHyperparameter(uint16 netuid, string calldata name, uint64 value) external onlyAdmin {
        Subnet storage s = subnetOf(netuid);
        bytes32 h = keccak256(bytes(name));
        if (h == keccak256("tempo")) {
            // Re-anchor: the next epoch fires `value` blocks after the last one.
            s.anchorIndex = epochIndex(s);
            s.anchorBlock = lastEpochBlock(s);
            s.tempo = uint16(value);
        } else if (h == keccak256("commit_reveal")) s.commitReveal = value != 0;
        else if (h == keccak256("version_key")) s.versionKey = value;
        else if (h == keccak256("rate_limit")) s.rateLimit = value;
        else if (h == keccak256("reveal_period")) {
            // weights.rs set_reveal_period: MIN_COMMIT_REVEAL_PEROIDS 1, MAX 100.
            require(value >= 1 && value <= 100, "RevealPeriodTooSmall/TooLarge");
            s.revealPeriod = value;
        } else if (h == keccak256("min_allowed_weights")) s.minAllowedWeights = uint16(value);
        else if (h == keccak256("max_weights_limit")) s.maxWeightsLimit = uint16(value);
        else if (h == keccak256("max_validators")) s.maxValidators = uint16(value);
        else if (h == keccak256("stake_threshold")) stakeThreshold = value;
        else if (h == keccak256("burn")) s.burn = value;
        else if (h == keccak256("burn_increase_mille")) s.burnIncreaseMille = value;
        else if (h == keccak256("registration_allowed")) s.registrationAllowed = value != 0;
        else revert("unknown hyperparameter");
    }

    // The hotkey's stake (rao). A validator permit follows at the next
    // epoch (top max_validators by stake, epoch/run_epoch.rs is_topk_nonzero).
    function setStake(uint16 netuid, uint16 uid, uint64 stake) external onlyAdmin {
        changeStake(subnetOf(netuid), neuronOf(netuid, uid), stake);
    }

    function changeStake(Subnet storage s, Neuron storage n, uint64 stake) internal {
        uint64 e = epochIndex(s);
        if (n.stakeEpoch != e) {
            n.prevStake = hotkeyStake[n.hotkey];
            n.stakeEpoch = e;
        }
        hotkeyStake[n.hotkey] = stake;
    }

    // Staking V2 (0x805) addStake(hotkey, amount_rao, netuid) from the
    // caller's mirror (precompiles/src/staking.rs; staking/add_stake.rs):
    // the hotkey must exist, the coldkey hold the amount.
    function addStake(address caller, bytes32 hotkey, uint256 amount, uint256 netuid) external from(STAKING) {
        require(netuid <= type(uint16).max, "netuid out of range");
        Subnet storage s = subnetOf(uint16(netuid));
        uint16 p = s.uidPlusOneOf[hotkey];
        if (p == 0) fail("HotKeyAccountNotExists");
        if (amount == 0 || amount > type(uint64).max) fail("AmountTooLow");
        if (caller.balance < amount * 1e9) fail("NotEnoughBalanceToStake");
        Neuron storage n = s.neurons[p - 1];
        changeStake(s, n, hotkeyStake[hotkey] + uint64(amount));
    }

    // The chain's pruning choice, as subtensor makes it when a subnet is
    // full: the next registration replaces `uid`.
    function pruneNext(uint16 netuid, uint16 uid) external onlyAdmin {
        Subnet storage s = subnetOf(netuid);
        require(uid < s.uidCount, "uid out of range");
        s.prunePlusOne = uid + 1;
    }

    // ---- stake and permits ----
    // Stake as of the start of the current epoch: what the epoch that
    // handed out the permits saw.
    function epochStake(Subnet storage s, Neuron storage n) internal view returns (uint64) {
        if (n.stakeEpoch == epochIndex(s)) return n.prevStake;
        return hotkeyStake[n.hotkey];
    }

    function hasPermit(Subnet storage s, uint16 uid) internal view returns (bool) {
        uint64 mine = epochStake(s, s.neurons[uid]);
        if (mine == 0) return false;
        uint256 above = 0;
        for (uint16 i = 0; i < s.uidCount; i++) {
            if (i == uid) continue;
            uint64 other = epochStake(s, s.neurons[i]);
            if (other > mine || (other == mine && i < uid)) above++;
        }
        return above < s.maxValidators;
    }

    // ---- registration (subnets/registration.rs do_register, burned) ----
    function burnedRegister(address caller, uint16 netuid, bytes32 hotkey) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        if (!s.registrationAllowed) fail("SubNetRegistrationDisabled");
        if (s.uidPlusOneOf[hotkey] != 0) fail("HotKeyAlreadyRegisteredInSubNet");
        // 1 rao = 1e9 wei on Bittensor's EVM.
        if (caller.balance < uint256(s.burn) * 1e9) fail("NotEnoughBalanceToStake");
        if (s.prunePlusOne == 0 && s.uidCount >= s.maxUids) fail("NoNeuronIdAvailable");
        uint16 uid;
        if (s.prunePlusOne != 0) {
            uid = s.prunePlusOne - 1;
            s.prunePlusOne = 0;
            delete s.uidPlusOneOf[s.neurons[uid].hotkey];
            delete s.neurons[uid];
        } else {
            uid = s.uidCount++;
        }
        Neuron storage n = s.neurons[uid];
        n.hotkey = hotkey;
        n.coldkey = mirror(caller);
        n.lastUpdate = uint64(block.number);  // subnets/uids.rs: set at registration
        n.stakeEpoch = epochIndex(s);
        s.uidPlusOneOf[hotkey] = uid + 1;
        // bump_registration_price_after_registration
        s.burn = uint64((uint256(s.burn) * s.burnIncreaseMille) / 1000);
        emit NeuronRegistered(netuid, uid, hotkey);
    }

    // ---- weights (subnets/weights.rs, guards/check_weights.rs) ----
    function registeredUid(Subnet storage s, bytes32 who) internal view returns (uint16) {
        uint16 p = s.uidPlusOneOf[who];
        if (p == 0) fail("HotKeyNotRegisteredInSubNet");
        return p - 1;
    }

    function checkMinStake(bytes32 who) internal view {
        if (hotkeyStake[who] < stakeThreshold) fail("NotEnoughStakeToSetWeights");
    }

    function rateLimitOk(Subnet storage s, Neuron storage n) internal view returns (bool) {
        if (n.lastUpdate == 0) return true;
        return uint64(block.number) - n.lastUpdate >= s.rateLimit;
    }

    function isSelfWeight(uint16 uid, uint16[] calldata uids, uint16[] calldata values) internal pure returns (bool) {
        return values.length == 1 && uids.length >= 1 && uids[0] == uid;
    }

    // internal_set_weights, in its order.
    function checkWeights(Subnet storage s, bytes32 who, uint16[] calldata uids, uint16[] calldata values,
                          uint64 versionKey) internal view returns (uint16 uid) {
        if (uids.length != values.length) fail("WeightVecNotEqualSize");
        if (uids.length > s.uidCount) fail("UidsLengthExceedUidsInSubNet");
        uid = registeredUid(s, who);
        checkMinStake(who);
        if (s.versionKey != 0 && versionKey < s.versionKey) fail("IncorrectWeightVersionKey");
        Neuron storage n = s.neurons[uid];
        if (!s.commitReveal && !rateLimitOk(s, n)) fail("SettingWeightsTooFast");
        bool self = isSelfWeight(uid, uids, values);
        if (!self && !hasPermit(s, uid)) fail("NeuronNoValidatorPermit");
        for (uint256 i = 0; i < uids.length; i++) {
            for (uint256 j = 0; j < i; j++) {
                if (uids[i] == uids[j]) fail("DuplicateUids");
            }
        }
        for (uint256 i = 0; i < uids.length; i++) {
            if (uids[i] >= s.uidCount) fail("UidVecContainInvalidOne");
        }
        uint256 minAllowed = s.minAllowedWeights < s.uidCount ? s.minAllowedWeights : s.uidCount;
        if (!self && values.length < minAllowed) fail("WeightVecLengthIsLow");
        if (!self && !maxWeightLimited(values, s.maxWeightsLimit)) fail("MaxWeightExceeded");
    }

    // epoch/math.rs check_vec_max_limited: the largest share of the sum is
    // at most limit / 65535 (max-upscaling does not change shares).
    function maxWeightLimited(uint16[] calldata values, uint16 limit) internal pure returns (bool) {
        if (limit == 65535) return true;
        uint256 sum = 0;
        uint256 max = 0;
        for (uint256 i = 0; i < values.length; i++) {
            sum += values[i];
            if (values[i] > max) max = values[i];
        }
        if (sum == 0) return true;
        return max * 65535 <= uint256(limit) * sum;
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
        bytes32 who = mirror(caller);
        if (s.commitReveal) fail("CommitRevealEnabled");
        uint16 uid = checkWeights(s, who, uids, values, versionKey);
        store(netuid, uid, s.neurons[uid], uids, values);
    }

    function commitWeights(address caller, uint16 netuid, bytes32 hash) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        bytes32 who = mirror(caller);
        checkMinStake(who);  // the CheckWeights extension runs before the call
        if (!s.commitReveal) fail("CommitRevealDisabled");
        uint16 uid = registeredUid(s, who);
        Neuron storage n = s.neurons[uid];
        if (!rateLimitOk(s, n)) fail("CommittingWeightsTooFast");
        Commit[] storage q = s.commits[who];
        uint64 current = epochIndex(s);
        // Drop expired commits from the front.
        uint256 drop = 0;
        while (drop < q.length && current > q[drop].epoch + s.revealPeriod) drop++;
        if (drop > 0) shift(q, drop);
        if (q.length >= 10) fail("TooManyUnrevealedCommits");
        q.push(Commit(hash, current));
        n.lastUpdate = uint64(block.number);
    }

    function shift(Commit[] storage q, uint256 k) internal {
        for (uint256 i = k; i < q.length; i++) q[i - k] = q[i];
        for (uint256 i = 0; i < k; i++) q.pop();
    }

    function revealWeights(address caller, uint16 netuid, uint16[] calldata uids, uint16[] calldata values,
                           uint16[] calldata salt, uint64 versionKey) external from(NEURON) {
        Subnet storage s = subnetOf(netuid);
        bytes32 who = mirror(caller);
        bytes32 hash = Blake2b.hash256(abi.encodePacked(who, le16(netuid), vec16(uids), vec16(values), vec16(salt), le64(versionKey)));
        consumeCommit(s, who, hash);
        uint16 uid = checkWeights(s, who, uids, values, versionKey);
        store(netuid, uid, s.neurons[uid], uids, values);
    }

    // The CheckWeights extension (guards/check_weights.rs check_reveal):
    // the commit must be queued, and the current epoch exactly its epoch +
    // RevealPeriodEpochs; too late reads RevealTooEarly too, there.
    function consumeCommit(Subnet storage s, bytes32 who, bytes32 hash) internal {
        checkMinStake(who);
        Commit[] storage q = s.commits[who];
        uint256 found = type(uint256).max;
        for (uint256 i = 0; i < q.length; i++) {
            if (q[i].hash == hash) {
                found = i;
                break;
            }
        }
        if (found == type(uint256).max) fail("NoWeightsCommitFound");
        if (epochIndex(s) != q[found].epoch + s.revealPeriod) fail("RevealTooEarly");
        if (!s.commitReveal) fail("CommitRevealDisabled");
        shift(q, found + 1);  // the revealed commit and every one before it
    }

    // ---- Proxy (pallets/proxy/src/lib.rs; runtime/src/lib.rs ProxyType filters) ----
    function addProxy(address caller, bytes32 delegate, uint8 proxyType, uint32 delay) external from(PROXY) {
        require(proxyType <= 17, "Invalid proxy type");
        bytes32 who = mirror(caller);
        if (delegate == who) fail("NoSelfProxy");
        ProxyDef[] storage list = proxies[who];
        for (uint256 i = 0; i < list.length; i++) {
            if (list[i].delegate == delegate && list[i].proxyType == proxyType && list[i].delay == delay) fail("Duplicate");
        }
        if (list.length >= 20) fail("TooMany");  // MaxProxies
        // The deposit, ProxyDepositBase + ProxyDepositFactor x n (deposit(1, 40) +
        // deposit(0, 33) x n rao), is reserved from the caller's free balance.
        uint256 deposit = (20_000_000 + 40 * 1_000_000 + 33 * 1_000_000 * (list.length + 1)) * 1e9;
        if (caller.balance < deposit) fail("InsufficientBalance");
        list.push(ProxyDef(delegate, proxyType, delay));
    }

    function removeProxy(address caller, bytes32 delegate, uint8 proxyType, uint32 delay) external from(PROXY) {
        require(proxyType <= 17, "Invalid proxy type");
        ProxyDef[] storage list = proxies[mirror(caller)];
        for (uint256 i = 0; i < list.length; i++) {
            if (list[i].delegate == delegate && list[i].proxyType == proxyType && list[i].delay == delay) {
                list[i] = list[list.length - 1];
                list.pop();
                return;
            }
        }
        fail("NotFound");
    }

    function getProxies(bytes32 account) external view returns (ProxyDef[] memory) {
        return proxies[account];
    }

    // Proxy.proxy(real, force_proxy_type, call) from the caller's mirror.
    function proxyCall(address caller, bytes32 real, uint8[] calldata forceType, uint8[] calldata call) external from(PROXY) {
        if (forceType.length > 0) require(forceType[0] <= 17, "Invalid proxy type");
        bytes32 delegate = mirror(caller);
        ProxyDef[] storage list = proxies[real];
        bool found = false;
        uint8 proxyType = 0;
        for (uint256 i = 0; i < list.length && !found; i++) {
            if (list[i].delegate == delegate && (forceType.length == 0 || list[i].proxyType == forceType[0])) {
                found = true;
                proxyType = list[i].proxyType;
                require(list[i].delay == 0, "dispatch execution failed: Unannounced");
            }
        }
        if (!found) fail("NotProxy");
        require(call.length >= 2, "The raw call data not correctly encoded");
        // Commitments (pallet 18) set_commitment (call 0): the only call
        // the stand-in models.
        require(call[0] == 18 && call[1] == 0, "stand-in: only Commitments.set_commitment can be proxied here");
        // Any, NonCritical and NonTransfer let Commitments through; the
        // allow-lists of the others do not name it (frame_system CallFiltered).
        if (proxyType != 0 && proxyType != 2 && proxyType != 3) revert("Module { message: Some(\"CallFiltered\") }");
        setCommitment(real, call);
    }

    // ---- Commitments (pallets/commitments/src/lib.rs, types.rs) ----
    // `call`: 18 0 | u16le netuid | compact(n) | n x Data. Decoding follows
    // types.rs: Raw <= 128 B (tags 1-129), hashes (130-133), timelocked
    // (134: compact len <= 1024, u64), ResetBondsFlag (135), BigRaw (136:
    // compact len <= 512); at most MaxFields = 3 (a BoundedVec: more is a
    // decoding error). Trailing bytes are ignored, as decode_with_depth_limit does.
    function setCommitment(bytes32 who, uint8[] calldata call) internal {
        require(call.length >= 5, "The raw call data not correctly encoded");
        uint16 netuid = uint16(call[2]) | (uint16(call[3]) << 8);
        (uint256 fields, uint256 pos) = compactAt(call, 4);
        require(fields <= 3, "The raw call data not correctly encoded");
        uint256 start = 4;
        uint256 space = 0;
        for (uint256 f = 0; f < fields; f++) {
            uint256 used;
            (pos, used) = dataAt(call, pos);
            space += used;
        }
        Subnet storage s = subnetOf(netuid);
        if (s.uidPlusOneOf[who] == 0) fail("AccountNotAllowedCommit");
        if (space < 100) space = 100;
        uint64 e = epochIndex(s);
        if (s.usedSpaceEpoch[who] != e) {
            s.usedSpaceEpoch[who] = e;
            s.usedSpace[who] = 0;
        }
        if (s.usedSpace[who] + space > 3100) fail("SpaceLimitExceeded");  // MaxSpace default
        s.usedSpace[who] += uint64(space);
        // Registration { deposit: u64 = 0 (free), block: u32, info }
        bytes memory reg = abi.encodePacked(le64(0), le32(uint32(block.number)));
        for (uint256 i = start; i < pos; i++) reg = abi.encodePacked(reg, call[i]);
        s.commitmentOf[who] = reg;
    }

    function compactAt(uint8[] calldata b, uint256 pos) internal pure returns (uint256 v, uint256 next) {
        require(pos < b.length, "The raw call data not correctly encoded");
        uint8 mode = b[pos] & 3;
        if (mode == 0) return (uint256(b[pos]) >> 2, pos + 1);
        if (mode == 1) {
            require(pos + 2 <= b.length, "The raw call data not correctly encoded");
            return ((uint256(b[pos]) | (uint256(b[pos + 1]) << 8)) >> 2, pos + 2);
        }
        require(mode == 2 && pos + 4 <= b.length, "The raw call data not correctly encoded");
        v = uint256(b[pos]) | (uint256(b[pos + 1]) << 8) | (uint256(b[pos + 2]) << 16) | (uint256(b[pos + 3]) << 24);
        return (v >> 2, pos + 4);
    }

    // One Data value at `pos`: where the next begins, and its len_for_rate_limit.
    function dataAt(uint8[] calldata b, uint256 pos) internal pure returns (uint256 next, uint256 used) {
        require(pos < b.length, "The raw call data not correctly encoded");
        uint8 tag = b[pos];
        pos += 1;
        uint256 len;
        if (tag == 0 || tag == 135) return (pos, 0);
        if (tag <= 129) {
            len = tag - 1;
            used = len;
        } else if (tag <= 133) {
            len = 32;
            used = 32;
        } else if (tag == 134 || tag == 136) {
            (len, pos) = compactAt(b, pos);
            require(len <= (tag == 134 ? 1024 : 512), "The raw call data not correctly encoded");
            used = len;
            if (tag == 134) len += 8;  // reveal_round: u64
        } else {
            revert("The raw call data not correctly encoded");
        }
        require(pos + len <= b.length, "The raw call data not correctly encoded");
        return (pos + len, used);
    }

    // What Commitments.CommitmentOf(netuid, account) holds (SCALE), or nothing.
    function commitmentOf(uint16 netuid, bytes32 account) external view returns (bytes memory) {
        return subnetOf(netuid).commitmentOf[account];
    }

    // ---- StorageQuery (0x807): SubtensorModule storage by its raw key ----
    function storageValue(bytes32 item, uint16 netuid) external view returns (bytes memory) {
        if (item == keccak256("StakeThreshold")) return abi.encodePacked(le64(stakeThreshold));
        Subnet storage s = subnets[netuid];
        if (!s.exists) return "";
        if (item == keccak256("Tempo")) return abi.encodePacked(le16(s.tempo));
        if (item == keccak256("SubnetEpochIndex")) return abi.encodePacked(le64(epochIndex(s)));
        if (item == keccak256("LastEpochBlock")) return abi.encodePacked(le64(lastEpochBlock(s)));
        if (item == keccak256("Burn")) return abi.encodePacked(le64(s.burn));
        if (item == keccak256("MaxAllowedValidators")) return abi.encodePacked(le16(s.maxValidators));
        return "";
    }

    // ---- SCALE helpers ----
    function le16(uint16 v) internal pure returns (bytes2) {
        return bytes2(uint16((v >> 8) | (v << 8)));
    }

    function le32(uint32 v) internal pure returns (bytes memory out) {
        out = new bytes(4);
        for (uint256 i = 0; i < 4; i++) out[i] = bytes1(uint8(v >> (8 * i)));
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

    // ---- views (Metagraph 0x802, Subnet 0x803, and for tests) ----
    // metagraph.rs get_uid_count: SubnetworkN, 0 for a subnet that does not exist.
    function getUidCount(uint16 netuid) external view returns (uint16) { return subnets[netuid].uidCount; }
    function getHotkey(uint16 netuid, uint16 uid) external view returns (bytes32) { return neuronOf(netuid, uid).hotkey; }
    function getColdkey(uint16 netuid, uint16 uid) external view returns (bytes32) { return neuronOf(netuid, uid).coldkey; }
    function getStake(uint16 netuid, uint16 uid) external view returns (uint64) { return hotkeyStake[neuronOf(netuid, uid).hotkey]; }
    function getValidatorStatus(uint16 netuid, uint16 uid) external view returns (bool) {
        neuronOf(netuid, uid);
        return hasPermit(subnets[netuid], uid);
    }
    function getLastUpdate(uint16 netuid, uint16 uid) external view returns (uint64) { return neuronOf(netuid, uid).lastUpdate; }
    function getIsActive(uint16 netuid, uint16 uid) external view returns (bool) { neuronOf(netuid, uid); return true; }
    function getCommitRevealWeightsEnabled(uint16 netuid) external view returns (bool) { return subnetOf(netuid).commitReveal; }
    function getWeightsVersionKey(uint16 netuid) external view returns (uint64) { return subnetOf(netuid).versionKey; }
    function getWeightsSetRateLimit(uint16 netuid) external view returns (uint64) { return subnetOf(netuid).rateLimit; }
    function getCommitRevealWeightsInterval(uint16 netuid) external view returns (uint64) { return subnetOf(netuid).revealPeriod; }
    function getMinAllowedWeights(uint16 netuid) external view returns (uint16) { return subnetOf(netuid).minAllowedWeights; }
    function getMaxWeightLimit(uint16 netuid) external view returns (uint16) { return subnetOf(netuid).maxWeightsLimit; }
    function getNetworkRegistrationAllowed(uint16 netuid) external view returns (bool) { return subnetOf(netuid).registrationAllowed; }

    function getWeights(uint16 netuid, uint16 uid) external view returns (uint16[] memory, uint16[] memory, uint64) {
        Neuron storage n = neuronOf(netuid, uid);
        return (n.weightUids, n.weightValues, n.weightPosts);
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
