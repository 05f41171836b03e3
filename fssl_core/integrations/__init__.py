"""Bridges to the tools researchers already use, each behind its own optional dependency: MLflow
(mlflow_track: each run followed while it trains; mlflow_export: the store's finished runs after the fact;
mlflow_fields: what both write), Flower (flower: any fssl algorithm as a Flower
ServerApp and ClientApp, the app of flower-app/) and Flower Datasets (flower_datasets: fssl's partitions
as partitioners). Nothing else in fssl_core imports them."""
