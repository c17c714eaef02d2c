// A YAML document with its keys, values and comments told apart by colour:
// a line-by-line reading, enough for the configuration Prometheus prints
// (block style, no multi-line scalars), without a highlighting library.

// indent, list dash, key, colon, value, comment
const LINE = /^(\s*)(-\s+)?(?:([^\s#'"][^:#]*?|"[^"]*"|'[^']*')(:)(?=\s|$))?(\s*)(.*?)(\s+#.*)?$/;

function valueClass(value: string): string {
  if (/^(true|false|null|~)$/.test(value)) return "yaml-bool";
  if (/^-?(\d[\d_]*(\.\d+)?([eE][-+]?\d+)?|0x[0-9a-fA-F]+)$/.test(value)) return "yaml-number";
  return "yaml-string";
}

function Line({ text }: { text: string }) {
  if (/^\s*#/.test(text)) return <span class="yaml-comment">{text}</span>;
  const m = LINE.exec(text);
  if (!m) return <>{text}</>;
  const [, indent, dash, key, colon, space, value, comment] = m;
  return (
    <>
      {indent}
      {dash && <span class="yaml-dash">{dash}</span>}
      {key && <span class="yaml-key">{key}</span>}
      {colon}
      {space}
      {value && <span class={valueClass(value)}>{value}</span>}
      {comment && <span class="yaml-comment">{comment}</span>}
    </>
  );
}

export function YamlView({ yaml }: { yaml: string }) {
  const lines = yaml.replace(/\n$/, "").split("\n");
  return (
    <pre class="code yaml">
      <code>
        {lines.map((line, i) => (
          <span key={i}>
            <Line text={line} />
            {"\n"}
          </span>
        ))}
      </code>
    </pre>
  );
}
