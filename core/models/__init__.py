"""What the metrics and judges stand on: pretrained encoders (the one place that loads pretrained weights),
the chitchat corpus, reference pools and retrieval, the NN-rater, MME's sub-metric networks, and the
safetensors + manifest checkpoint format."""
