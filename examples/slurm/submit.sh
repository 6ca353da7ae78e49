#!/bin/bash
# A sharded RuleDrift run on SLURM (docs/scaling.md): the model server, an array of shards that
# starts once the server has started, and the merge once every shard has ended, whatever its
# exit code (afterany: a shard that could not run still leaves the merge to say so).
# Run it from the folder that holds suite.json (or set RULEDRIFT_SUITE); reports go to
# ./reports. Usage: examples/slurm/submit.sh
set -euo pipefail
here=$(dirname "$0")
rm -f server-url reports/shard-*.json reports/shard-*.xml
server=$(sbatch --parsable "$here/server.sbatch")
shards=$(sbatch --parsable --dependency="after:$server" "$here/shards.sbatch")
merge=$(sbatch --parsable --dependency="afterany:$shards" \
  --export="ALL,RULEDRIFT_SERVER_JOB=$server" "$here/merge.sbatch")
echo "server job $server, shards $shards (array), merge $merge"
