"""The lab, outside the wheel: the efficiency fit, the accuracy benchmarks and the error-band writer
(python -m validation.NAME). The product (planner/, ui/) never imports it; it reads its outputs in data/."""
