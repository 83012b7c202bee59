"""A corpus of programs profiled together: which library rules the engine should ship.

``adcli corpus run`` profiles every program (a script, the scripts of a folder, a module) in a
process of its own, with a time and a memory limit, on a Dask cluster (a local one of worker
processes by default; ``--scheduler`` for an existing one), and keeps each profile in a corpus
store as it arrives (store.py: the profiles as files, an index in DuckDB). ``adcli corpus
suggest`` reads the store: the library tier over all its programs.

* programs.py: what a target names (scripts, folders, modules) and each program's key, for resuming;
* worker.py: one program profiled in a process of its own, its failure classified;
* store.py: the store (profiles written atomically, one index transaction per program);
* run.py: the run on Dask (progress, Ctrl-C, resuming);
* tier.py: the library tier over the store.
"""
