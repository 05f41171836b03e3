"""Bridges to the tools researchers already use, each behind its own optional dependency: MLflow
(mlflow_export: the run store's runs as MLflow runs) and Flower (flower: any fssl algorithm as a Flower
ServerApp and ClientApp). Nothing else in fssl_core imports them."""
