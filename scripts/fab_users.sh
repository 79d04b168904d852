#!/usr/bin/env bash
# The deployment's FAB logins, made once and kept in step with their passwords (idempotent):
#   fab_users.sh USER ROLE PASSWORD_VARIABLE [USER ROLE PASSWORD_VARIABLE ...]
# Each password is read from the named environment variable (never an argument given to this script),
# and handed on as --password=VALUE (a generated password may start with "-": argparse took it for an option).
# Run where `airflow` reaches the metadata DB under the FAB auth manager: compose's airflow-init,
# scripts/deploy_local.sh up. Roles are FAB's (Admin, Op, User, Viewer, Public) or one made with
# `airflow roles create` (docs/running.md: Users and roles).
set -euo pipefail
have=$(airflow users list --output plain 2>/dev/null | awk 'NR > 1 {print $2}')
while [ $# -ge 3 ]; do
  user=$1 role=$2 var=$3
  shift 3
  password=${!var:?"$var is empty: the password of $user"}
  if grep -qxF -- "$user" <<<"$have"; then
    airflow users reset-password --username "$user" --password="$password" >/dev/null
    echo "[fab-users] $user: password set from $var"
  else
    airflow users create --username "$user" --role "$role" --password="$password" \
      --firstname "$user" --lastname "(sweep deployment)" --email "$user@localhost" >/dev/null
    echo "[fab-users] $user: made, role $role"
  fi
done
[ $# -eq 0 ] || { echo "usage: $0 USER ROLE PASSWORD_VARIABLE ..." >&2; exit 2; }
