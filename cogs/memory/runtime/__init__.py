"""The process around the memory core: where its files live and which devices and dtypes models use (config), the
hardware profiles that size everything (profile, profile_choice), the threads models run on (workers), and the child
process that exports a model to ONNX (export_child), and the terminal progress of long commands (progress).

May import: ``language`` (a profile's scripts) and ``search.ranking`` (a profile's [ranking] table); nothing else of
the core.
"""
