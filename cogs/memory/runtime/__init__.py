"""The process around the memory core: where its files live, which devices and dtypes models use, and the settings
read from the environment and .env (config), logging (logs), what the machine offers (hardware), the hardware
profiles that size everything (profile, profile_choice) and the first stage's tuning a profile holds (ranking), the
threads models run on (workers), the child process that exports a model to ONNX (export_child), and the terminal
progress of long commands (progress).

May import: ``language`` (a profile's scripts); nothing else of the core. ``search`` and every other part may import
it, never the reverse.
"""
