import time, torch
from fssl_core.run_config import RunConfig
from fssl_core.engine.federation import Federation
torch.set_num_threads(1)
cfg = RunConfig(algorithm="fedavg", dataset="mnist", rounds=10)
fed = Federation.build(cfg)
state = fed.initial_state(); state, _ = fed.run_round(state, 1)
tensors = fed.algorithm.eval_tensors(state)
xn = fed.data.normalize(fed.data.test_x)
model = fed.ctx.model
def functional(x):
    return torch.cat([fed.ctx.apply(tensors, x[i:i+1024], train=False) for i in range(0, len(x), 1024)])
m2 = type(model)(**{}) if False else None
import copy
direct = copy.deepcopy(model); direct.load_state_dict(tensors); direct.eval()
def module(x):
    return torch.cat([direct(x[i:i+1024]) for i in range(0, len(x), 1024)])
cl = copy.deepcopy(direct).to(memory_format=torch.channels_last)
xcl = xn.contiguous(memory_format=torch.channels_last)
def chlast(x):
    return torch.cat([cl(xcl[i:i+1024]) for i in range(0, len(x), 1024)])
with torch.no_grad():
    ref = functional(xn)
    for name, f in [("functional", functional), ("module", module), ("channels_last", chlast)]:
        ts = []
        for _ in range(4):
            t = time.perf_counter(); out = f(xn); ts.append(time.perf_counter() - t)
        print(name, round(min(ts), 3), "equal:", torch.equal(out, ref))
print(model)
