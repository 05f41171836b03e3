import time, torch, sys
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation
from fssl_core.perf.bench import PROTOCOL
torch.set_num_threads(1)
from fssl_core.engine.allocator import keep_freed_memory
keep_freed_memory()          # as train() does when a run starts
for name, cfg in [("default", RunConfig(algorithm="fedavg", dataset="mnist", rounds=10)),
                  ("table5 protocol", RunConfig(**{**PROTOCOL, "algorithm": "fedavg", "rounds": 10}))]:
    fed = Federation.build(cfg); state = fed.initial_state()
    ev = []; orig = fed.test_metrics
    def timed(t, orig=orig, ev=ev):
        s = time.perf_counter(); o = orig(t); ev.append(time.process_time() - s0[0] if False else time.perf_counter() - s); return o
    fed.test_metrics = timed
    tot = []
    s0 = [0]
    for r in range(1, 5):
        s = time.perf_counter(); state, _ = fed.run_round(state, r); tot.append(time.perf_counter() - s)
    print(name, "labeled_repeats", cfg.labeled_repeats, "round", [round(x, 2) for x in tot], "eval", [round(x, 2) for x in ev],
          "share", round(sum(ev[1:]) / sum(tot[1:]), 3))
