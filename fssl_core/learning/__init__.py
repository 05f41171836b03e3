"""What a client's training is made of, below the algorithms: batches of a client's data, the local
SGD step, the cohort trainer, aggregation, the semi-supervised losses, numeric precision."""
