// Command-line flags (`/flags`): every flag and its value, filtered by text.
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { Empty, PageHeader, SearchInput } from "../components/controls";
import { matchesSearch, setSearchParams } from "../components/urlState";
import "../components/ui.css";

export function FlagsPage({ location }: PageProps) {
  const search = location.search.get("search") ?? "";
  const fetched = useApi<Record<string, string>>("api/v1/status/flags");
  return (
    <div data-testid="page-flags">
      <PageHeader title="Command-line flags" loading={fetched.loading} onRefresh={fetched.reload} />
      <div class="toolbar">
        <SearchInput
          label="Filter flags"
          placeholder="Filter by flag name or value"
          value={search}
          onInput={(v) => setSearchParams(location, { search: v })}
        />
      </div>
      <Fetching fetched={fetched} what="the flags">
        {(flags) => {
          const shown = Object.entries(flags)
            .filter(([name, value]) => matchesSearch(search, name, value))
            .sort(([a], [b]) => a.localeCompare(b));
          if (shown.length === 0) return <Empty>No flag matches “{search}”.</Empty>;
          return (
            <section class="card">
              <div class="scroll-x">
                <table class="flags-table">
                  <thead>
                    <tr>
                      <th>Flag</th>
                      <th>Value</th>
                    </tr>
                  </thead>
                  <tbody>
                    {shown.map(([name, value]) => (
                      <tr key={name} data-testid="flag">
                        <td class="mono">--{name}</td>
                        <td class="mono">{value === "" ? <span class="muted">(empty)</span> : value}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </section>
          );
        }}
      </Fetching>
    </div>
  );
}
