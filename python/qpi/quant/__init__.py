"""Post-training quantization pieces used by qpi.calibrate: range statistics
(histograms), cross-layer equalization, and the QDQ model writer."""
