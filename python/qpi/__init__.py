from ._engine import cpu_info
