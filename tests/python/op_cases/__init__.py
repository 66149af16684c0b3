"""Rows of the op test table, one module per op family (see op_table.py)."""
