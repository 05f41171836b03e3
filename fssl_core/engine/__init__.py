"""The engine: a federation's rounds (federation.py), the rounds of one run or a batch of runs into the
store (engine/trainer.py), the GPU defaults it reads, a trained model's latent features."""
