"""The main job's plan: which runs each notebook reads, which the store holds, how long the rest take."""
