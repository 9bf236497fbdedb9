#include "crucible/validator/validator_options.h"

#include <limits>

namespace crucible::validator {

void bind_options(config::Schema& s, ValidatorOptions& o) {
  s.add_string("validator.data_dir", &o.data_dir, "Token shards (the same files as the miners').");
  s.add_string("validator.state_dir", &o.state_dir, "RocksDB state and the validator's copy of the model.");
  s.add_int("validator.eval_per_window", &o.eval_per_window, "Uids evaluated per window.", 1, 4096);
  s.add_int("validator.eval_newcomers", &o.eval_newcomers,
            "Of those, how many never-evaluated uids go first (more only when slots remain): a swarm of new "
            "uids cannot crowd out uids with a record.",
            0, 4096);
  s.add_double("validator.eval_window_share", &o.eval_window_share,
               "Share of a window's length, from the start of its processing, in which evaluations start (none "
               "but the first after it; the uids left wait and go first next window): the window ends in its time "
               "on a slow or busy machine (0: no bound).",
               0, 1);
  s.add_int("validator.eval_batches", &o.eval_batches, "Samples per loss measurement.", 1, 4096);
  s.add_double("validator.eval_lr_factor", &o.eval_lr_factor, "Share of the outer step applied when evaluating.", 0,
               10);
  s.add_int("validator.weights_every", &o.weights_every, "Windows between weight posts.", 1, 1'000'000);
  s.add_int("validator.checkpoint_every", &o.checkpoint_every, "Windows between the lead's checkpoints.", 1, 1'000'000);
  s.add_double("validator.copy_overlap", &o.copy_overlap, "Mean top-k index overlap that counts as a copy.", 0, 1);
  s.add_double("validator.copy_cosine", &o.copy_cosine,
               "Absolute cosine of two updates' decoded values (estimated from sketches) at which they count as the "
               "same update: a copy within a window, a replay across windows.",
               0, 1);
  s.add_int("validator.history_windows", &o.history_windows,
            "Windows of uploads and applied aggregates (sketches kept in RocksDB) that every new update is compared "
            "with for replays.",
            1, 10'000);
  s.add_int("validator.fetch_parallelism", &o.fetch_parallelism,
            "Peers checked at once (at least the number of miners, so that one deadline bounds the gather).", 1, 256);
  s.add_double("validator.fetch_deadline_s", &o.fetch_deadline_s,
               "Deadline of every call on a peer's store (HEAD, GET), retries included.", 0.1, 3600);
  s.add_int("validator.burn_uid", &o.burn_uid,
            "Uid that gets all the weight when no uid has a positive score (Bittensor's burn: the subnet owner's "
            "uid 0), so older weights never stay in force.");
  s.add_int("validator.heldout_samples", &o.heldout_samples,
            "Samples of the data's held-out (val) split on which the global model's loss is measured each window "
            "(0: off).",
            0, 1'000'000);
  s.add_double("validator.gather_deadline_s", &o.gather_deadline_s,
               "No peer's check starts after this many seconds of a window's gather.", 0.1, 3600);
  s.add_double("validator.observe_interval_s", &o.observe_interval_s,
               "Seconds between two polls of a miner's key around its upload slot: when this validator first saw "
               "an update decides its timing and which of two equal updates came first.",
               0.01, 60);
  s.add_double("validator.observe_idle_interval_s", &o.observe_idle_interval_s,
               "Seconds between two polls of a miner's key while its slot is still far off (more than a block, "
               "two observe intervals and the skew before it opens, estimated from the recent block time); "
               "after the slot and a margin the key is not read again.",
               0.01, 3600);
  s.add_double("validator.observe_max_latency_s", &o.observe_max_latency_s,
               "A poll (HEAD and download) that takes longer than this proves nothing about time; keep it above "
               "the time a packet takes to download.",
               0.01, 600);
  s.add_string("validator.device", &o.device, "Where to evaluate, and where updates are decoded and merged.",
               {"cpu", "cuda"});
  s.add_string("validator.autocast", &o.autocast,
               "Evaluation's forward passes in bf16 autocast: auto (on CUDA only), bf16, off.",
               {"auto", "bf16", "off"});
  s.add_int("validator.threads", &o.threads, "Compute threads (0 = all cores).", 0, 1024);
  s.add_int("validator.start_window", &o.start_window,
            "First window a fresh validator processes (-1: the one under way; older ones replay history).", -1,
            std::numeric_limits<std::int64_t>::max());
  s.add_int("validator.end_window", &o.end_window, "Stop before this window (-1: never).", -1,
            std::numeric_limits<std::int64_t>::max());
  s.add_double("validator.aggregate_wait_s", &o.aggregate_wait_s,
               "How long a validator that is not the lead waits for the lead's aggregation set.", 0, 86'400);
  s.add_secret("validator.random_seed", &o.random_seed,
               "Seed of the random-data choice; keep it private (empty: derived from the key).");
  s.add_string("validator.gradient_check", &o.gradient_check,
               "The gradient check of evaluated updates (docs/protocol.md §6): off (the default), measure (log "
               "and store the alignments only), require (binary +1 also needs the update better aligned with the "
               "gradient on its own samples than on random samples). One backward pass per evaluation, and one "
               "per window: about half of an evaluation's time.",
               {"off", "measure", "require"});
  s.add_bool("validator.measure_decoy", &o.measure_decoy,
             "Diagnostics: also measure each evaluated update on another evaluated uid's own samples and log it as "
             "decoy_gain: what a miner that trained on someone else's data would show (docs/reliability.md).");
  s.add_int("validator.max_windows", &o.max_windows, "Stop after this many windows (0 = run until stopped).", 0,
            1'000'000'000);
}

void bind_options(config::Schema& s, ApiOptions& o) {
  s.add_string("api.bind", &o.bind, "Address of the score API.");
  s.add_int("api.port", &o.port, "Port of the score API (0 = off).");
  s.add_int("api.max_connections", &o.max_connections, "Open connections at most (503 beyond).", 1, 100'000);
  s.add_int("api.max_connections_per_client", &o.max_connections_per_client,
            "Open connections from one client address at most; more are closed at once (0 = no cap: behind a "
            "reverse proxy, whose address all clients share).",
            0, 100'000);
  s.add_double("api.idle_timeout_s", &o.idle_timeout_s,
               "A kept-alive connection without a new request is closed after this.", 0.1, 3600);
  s.add_double("api.header_timeout_s", &o.header_timeout_s,
               "A request's head must arrive within this, from its first byte (a new connection's first byte too).",
               0.1, 600);
  s.add_int("api.threads", &o.threads, "Threads serving API requests.", 1, 64);
  s.add_int("api.max_header_bytes", &o.max_header_bytes, "Largest request head.", 512, 1 << 20);
}

}  // namespace crucible::validator
