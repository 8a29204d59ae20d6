# 6. list --json (as the proxy) shows each tenant's usage, from its cgroup.
all=$(as_proxy "$HELPER" list --json)
equals "list --json as the proxy: both tenants" "$(echo "$all" | grep -c '"tenant": ')" 2
for t in "$T1" "$T2"; do
  line=$(echo "$all" | grep "\"tenant\": \"$t\"")
  field() { echo "$line" | sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p"; }
  mem=$(field memory) tasks=$(field tasks)
  check "list --json: $t's memory ($mem bytes) and tasks ($tasks) from its cgroup" \
    "[ '${mem:-0}' -gt 0 ] 2>/dev/null && [ '${tasks:-0}' -gt 0 ] 2>/dev/null" "$line"
  equals "list --json: $t's session jail is of this build" "$(field earlier_version)" false
done
