"""receval: declarative experiments for retrieval evaluation.

Data flows one way: dataset -> sections -> chunks -> index -> search -> collapse to
sections -> per-question metrics -> results.parquet + run.json. Reports, comparisons
and reproductions read only stored runs.
"""

__version__ = "0.1.0"
