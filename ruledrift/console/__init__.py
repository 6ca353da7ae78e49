"""What a person sees, for both front-ends (the CLI and the GitHub Action): `commands` shows a run,
a pull, a saved report, a merge or a comparison; `output` makes stdout and stderr safe; `github`
publishes annotations and the job summary; `exits` is the one place where exceptions become
exit codes. Kept empty, so that importing one of them (`--help`, `--version`) loads no more."""
