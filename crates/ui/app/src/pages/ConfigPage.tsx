// Configuration (`/config`): the loaded configuration file as the server
// reads it (defaults filled in, secrets masked), with a copy button.
import type { PageProps } from "../main";
import { useApi } from "../components/useApi";
import { Fetching } from "../components/Fetching";
import { CopyButton, Empty, PageHeader } from "../components/controls";
import { YamlView } from "../components/YamlView";
import { PageLink } from "../components/links";
import "../components/ui.css";

export function ConfigPage(_props: PageProps) {
  const fetched = useApi<{ yaml: string }>("api/v1/status/config");
  const yaml = fetched.answer?.data.yaml ?? "";
  return (
    <div data-testid="page-config">
      <PageHeader title="Configuration" loading={fetched.loading} onRefresh={fetched.reload}>
        {yaml.trim() !== "" && <CopyButton text={yaml} label="Copy to clipboard" />}
      </PageHeader>
      <Fetching fetched={fetched} what="the configuration">
        {({ yaml }) =>
          yaml.trim() === "" ? (
            <Empty>
              Cairn was started without <code>--config.file</code>: nothing is scraped and no rules are evaluated.
              Data arrives by remote write and the other write endpoints. See the{" "}
              <PageLink path="/flags">flags</PageLink>.
            </Empty>
          ) : (
            <YamlView yaml={yaml} />
          )
        }
      </Fetching>
    </div>
  );
}
