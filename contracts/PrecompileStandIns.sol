// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// Stand-ins placed at the Bittensor precompile addresses with anvil_setCode.
// Their runtime code runs without a constructor, so everything lives in
// SubtensorState at a fixed address; these forward calls (with the
// original caller for state changes). ABIs match subtensor's
// precompiles/src/solidity/{metagraph,subnet,neuron,proxy}.sol and
// precompiles/src/storage_query.rs.

address constant STATE = 0x000000000000000000000000000000000000c0DE;

interface IState {
    function getUidCount(uint16) external view returns (uint16);
    function getHotkey(uint16, uint16) external view returns (bytes32);
    function getColdkey(uint16, uint16) external view returns (bytes32);
    function getStake(uint16, uint16) external view returns (uint64);
    function getValidatorStatus(uint16, uint16) external view returns (bool);
    function getLastUpdate(uint16, uint16) external view returns (uint64);
    function getIsActive(uint16, uint16) external view returns (bool);
    function getCommitRevealWeightsEnabled(uint16) external view returns (bool);
    function getWeightsVersionKey(uint16) external view returns (uint64);
    function getWeightsSetRateLimit(uint16) external view returns (uint64);
    function getCommitRevealWeightsInterval(uint16) external view returns (uint64);
    function getMinAllowedWeights(uint16) external view returns (uint16);
    function getMaxWeightLimit(uint16) external view returns (uint16);
    function getNetworkRegistrationAllowed(uint16) external view returns (bool);
    function commitmentOf(uint16, bytes32) external view returns (bytes memory);
    function storageValue(bytes32, uint16) external view returns (bytes memory);
    struct ProxyDef {
        bytes32 delegate;
        uint8 proxyType;
        uint32 delay;
    }
    function getProxies(bytes32) external view returns (ProxyDef[] memory);
    function addProxy(address, bytes32, uint8, uint32) external;
    function removeProxy(address, bytes32, uint8, uint32) external;
    function proxyCall(address, bytes32, uint8[] calldata, uint8[] calldata) external;
    function addStake(address, bytes32, uint256, uint256) external;
    function burnedRegister(address, uint16, bytes32) external;
    function setWeights(address, uint16, uint16[] calldata, uint16[] calldata, uint64) external;
    function commitWeights(address, uint16, bytes32) external;
    function revealWeights(address, uint16, uint16[] calldata, uint16[] calldata, uint16[] calldata, uint64) external;
}

contract MetagraphStandIn {
    function getUidCount(uint16 netuid) external view returns (uint16) { return IState(STATE).getUidCount(netuid); }
    function getHotkey(uint16 netuid, uint16 uid) external view returns (bytes32) { return IState(STATE).getHotkey(netuid, uid); }
    function getColdkey(uint16 netuid, uint16 uid) external view returns (bytes32) { return IState(STATE).getColdkey(netuid, uid); }
    function getStake(uint16 netuid, uint16 uid) external view returns (uint64) { return IState(STATE).getStake(netuid, uid); }
    function getValidatorStatus(uint16 netuid, uint16 uid) external view returns (bool) { return IState(STATE).getValidatorStatus(netuid, uid); }
    function getLastUpdate(uint16 netuid, uint16 uid) external view returns (uint64) { return IState(STATE).getLastUpdate(netuid, uid); }
    function getIsActive(uint16 netuid, uint16 uid) external view returns (bool) { return IState(STATE).getIsActive(netuid, uid); }
}

contract SubnetStandIn {
    function getCommitRevealWeightsEnabled(uint16 netuid) external view returns (bool) { return IState(STATE).getCommitRevealWeightsEnabled(netuid); }
    function getWeightsVersionKey(uint16 netuid) external view returns (uint64) { return IState(STATE).getWeightsVersionKey(netuid); }
    function getWeightsSetRateLimit(uint16 netuid) external view returns (uint64) { return IState(STATE).getWeightsSetRateLimit(netuid); }
    function getCommitRevealWeightsInterval(uint16 netuid) external view returns (uint64) { return IState(STATE).getCommitRevealWeightsInterval(netuid); }
    function getMinAllowedWeights(uint16 netuid) external view returns (uint16) { return IState(STATE).getMinAllowedWeights(netuid); }
    function getMaxWeightLimit(uint16 netuid) external view returns (uint16) { return IState(STATE).getMaxWeightLimit(netuid); }
    function getNetworkRegistrationAllowed(uint16 netuid) external view returns (bool) { return IState(STATE).getNetworkRegistrationAllowed(netuid); }
}

contract NeuronStandIn {
    function burnedRegister(uint16 netuid, bytes32 hotkey) external payable { IState(STATE).burnedRegister(msg.sender, netuid, hotkey); }
    function setWeights(uint16 netuid, uint16[] calldata dests, uint16[] calldata weights, uint64 versionKey) external {
        IState(STATE).setWeights(msg.sender, netuid, dests, weights, versionKey);
    }
    function commitWeights(uint16 netuid, bytes32 commitHash) external { IState(STATE).commitWeights(msg.sender, netuid, commitHash); }
    function revealWeights(uint16 netuid, uint16[] calldata uids, uint16[] calldata values, uint16[] calldata salt, uint64 versionKey) external {
        IState(STATE).revealWeights(msg.sender, netuid, uids, values, salt, versionKey);
    }
}

// Staking V2 0x805 (precompiles/src/staking.rs): addStake only.
contract StakingStandIn {
    function addStake(bytes32 hotkey, uint256 amountRao, uint256 netuid) external payable {
        IState(STATE).addStake(msg.sender, hotkey, amountRao, netuid);
    }
}

// Proxy 0x80b (precompiles/src/proxy.rs): the caller acts as its mirror
// account. getProxies returns (delegate, type, delay) as uint256s there.
contract ProxyStandIn {
    struct ProxyInfo {
        bytes32 delegate;
        uint256 proxy_type;
        uint256 delay;
    }
    function addProxy(bytes32 delegate, uint8 proxyType, uint32 delay) external { IState(STATE).addProxy(msg.sender, delegate, proxyType, delay); }
    function removeProxy(bytes32 delegate, uint8 proxyType, uint32 delay) external { IState(STATE).removeProxy(msg.sender, delegate, proxyType, delay); }
    function proxyCall(bytes32 real, uint8[] calldata forceProxyType, uint8[] calldata call) external {
        IState(STATE).proxyCall(msg.sender, real, forceProxyType, call);
    }
    function getProxies(bytes32 account) external view returns (ProxyInfo[] memory out) {
        IState.ProxyDef[] memory list = IState(STATE).getProxies(account);
        out = new ProxyInfo[](list.length);
        for (uint256 i = 0; i < list.length; i++) out[i] = ProxyInfo(list[i].delegate, list[i].proxyType, list[i].delay);
    }
}

// StorageQuery 0x807 (precompiles/src/storage_query.rs): the input is a raw
// storage key, the output the SCALE value, empty when absent. Only the
// prefixes subtensor authorises (SubtensorModule, ...) are answered; the
// Commitments pallet is not among them ("Invalid key"). The keys are
// twox128("SubtensorModule") ++ twox128(item) ++ netuid (u16le, Identity).
contract StorageQueryStandIn {
    bytes16 constant SUBTENSOR = 0x658faa385070e074c85bf6b568cf0555;

    fallback(bytes calldata key) external returns (bytes memory) {
        require(key.length >= 32 && bytes16(key[0:16]) == SUBTENSOR, "Invalid key");
        bytes16 item = bytes16(key[16:32]);
        if (item == 0x782d99ebaa64a1ba18b3e8cda1047327) {
            return key.length == 32 ? IState(STATE).storageValue(keccak256("StakeThreshold"), 0) : bytes("");
        }
        if (key.length != 34) return "";
        uint16 netuid = uint16(uint8(key[32])) | (uint16(uint8(key[33])) << 8);
        bytes32 name;
        if (item == 0x7641384bb339f3758acddfd7053d3317) name = keccak256("Tempo");
        else if (item == 0x4f101d7a30ae31c7ab3099206c5ae12b) name = keccak256("SubnetEpochIndex");
        else if (item == 0x90010c37124c14146041452f9ffba0df) name = keccak256("LastEpochBlock");
        else if (item == 0x01be1755d08418802946bca51b686325) name = keccak256("Burn");
        else if (item == 0x741b883d2519eed91857993bfd4df0ba) name = keccak256("MaxAllowedValidators");
        else return "";
        return IState(STATE).storageValue(name, netuid);
    }
}

// Commitments.CommitmentOf as state_getStorage would return it (the SCALE
// Registration), for the local chain, where no Substrate RPC exists. Writes
// go through the Proxy stand-in, as on Bittensor.
contract CommitmentsStandIn {
    function commitmentOf(uint16 netuid, bytes32 account) external view returns (bytes memory) { return IState(STATE).commitmentOf(netuid, account); }
}
