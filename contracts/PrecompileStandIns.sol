// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

// Stand-ins placed at the Bittensor precompile addresses with anvil_setCode.
// Their runtime code runs without a constructor, so everything lives in
// SubtensorState at a fixed address; these forward calls (with the
// original caller for state changes). ABIs match subtensor's
// precompiles/src/solidity/{metagraph,subnet,neuron}.sol.

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
    function getCommitment(uint16, uint16) external view returns (bytes memory);
    function burnedRegister(address, uint16, bytes32) external;
    function setWeights(address, uint16, uint16[] calldata, uint16[] calldata, uint64) external;
    function commitWeights(address, uint16, bytes32) external;
    function revealWeights(address, uint16, uint16[] calldata, uint16[] calldata, uint16[] calldata, uint64) external;
    function setCommitment(address, uint16, bytes calldata) external;
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

// Where a miner publishes its bucket on the local chain (Bittensor keeps
// this in the Commitments pallet, which has no EVM precompile).
contract CommitmentsStandIn {
    function setCommitment(uint16 netuid, bytes calldata data) external { IState(STATE).setCommitment(msg.sender, netuid, data); }
    function getCommitment(uint16 netuid, uint16 uid) external view returns (bytes memory) { return IState(STATE).getCommitment(netuid, uid); }
}
