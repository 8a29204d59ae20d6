# 2. The proxy user as install/clihost/README.md says, two tenants as README
#    says ("Tenants: no route around the jail"), and the policy's edits an
#    operator makes: the tenants' shell, and limits small enough to reach.
useradd --system --gid clihost --create-home --home-dir /var/lib/clihost --shell /usr/sbin/nologin clihost \
  && ok "proxy user created (useradd --system --gid clihost ...)" || bad "proxy user created"
for t in "$T1" "$T2"; do
  if useradd --create-home --shell /usr/sbin/nologin --groups clihost-tenants "$t" && chmod 0750 "/home/$t" \
     && clihost-jail-close-routes "$t" >/dev/null; then ok "tenant $t created, its routes closed"
  else bad "tenant $t created"; fi
done
sed -i -e "s/^\(memory_max *= *\)[^ #]*/\1${MEM_MAX_MIB}M/" -e "s/^\(tasks_max *= *\)[^ #]*/\1$TASKS_MAX/" \
  -e 's|^\[jail\]$|[jail]\nshell = /usr/bin/bash|' "$CONF"
equals "the policy's limits are set" "$(grep -E '^(memory_max|tasks_max|shell) ' "$CONF" | awk '{print $3}' | tr '\n' ' ')" \
  "/usr/bin/bash ${MEM_MAX_MIB}M $TASKS_MAX "
