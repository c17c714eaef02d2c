// The CodeMirror setup of the PromQL editor: Prometheus' language support
// (highlighting, lint, completion from this server's API), colours from the
// page's theme, Enter to run and Shift+Enter for a new line.
import { EditorState, Prec, type Extension } from "@codemirror/state";
import { EditorView, keymap, placeholder, drawSelection, highlightSpecialChars } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap, insertNewlineAndIndent } from "@codemirror/commands";
import { bracketMatching, HighlightStyle, syntaxHighlighting } from "@codemirror/language";
import {
  autocompletion,
  closeBrackets,
  closeBracketsKeymap,
  completionKeymap,
  type CompletionContext,
  type CompletionResult,
} from "@codemirror/autocomplete";
import { lintKeymap } from "@codemirror/lint";
import { tags } from "@lezer/highlight";
import { PromQLExtension } from "@prometheus-io/codemirror-promql";
import { pathPrefix } from "../../api";
import { loadHistory } from "./history";

/** Token colours through CSS variables (set per theme in query.css). */
const highlight = HighlightStyle.define([
  { tag: tags.keyword, color: "var(--cm-keyword)" },
  { tag: [tags.function(tags.variableName), tags.operatorKeyword], color: "var(--cm-function)" },
  { tag: tags.modifier, color: "var(--cm-keyword)", fontWeight: "bold" },
  { tag: tags.labelName, color: "var(--cm-label)" },
  { tag: tags.string, color: "var(--cm-string)" },
  { tag: tags.number, color: "var(--cm-number)" },
  { tag: [tags.operator, tags.logicOperator, tags.arithmeticOperator], color: "var(--cm-operator)" },
  { tag: tags.comment, color: "var(--fg-muted)", fontStyle: "italic" },
  { tag: tags.invalid, color: "var(--error-fg)" },
]);

const theme = EditorView.theme({
  "&": { backgroundColor: "var(--bg)", color: "var(--fg)" },
  "&.cm-focused": { outline: "none" },
  ".cm-content": { fontFamily: "var(--mono)", caretColor: "var(--fg)", padding: "6px 0" },
  ".cm-cursor": { borderLeftColor: "var(--fg)" },
  "&.cm-focused .cm-selectionBackground, .cm-selectionBackground, ::selection": {
    backgroundColor: "var(--cm-selection) !important",
  },
  ".cm-placeholder": { color: "var(--fg-muted)" },
  ".cm-matchingBracket": { backgroundColor: "var(--cm-selection)", outline: "1px solid var(--border)" },
  ".cm-tooltip": {
    backgroundColor: "var(--bg-alt)",
    color: "var(--fg)",
    border: "1px solid var(--border)",
  },
  ".cm-tooltip-autocomplete > ul": { fontFamily: "var(--mono)", maxHeight: "18em" },
  ".cm-tooltip-autocomplete ul li[aria-selected]": {
    backgroundColor: "var(--accent)",
    color: "var(--accent-fg)",
  },
  ".cm-completionMatchedText": { textDecoration: "none", fontWeight: "bold" },
  ".cm-completionDetail": { color: "var(--fg-muted)", fontStyle: "normal", marginLeft: "0.8em" },
  ".cm-completionInfo": { maxWidth: "28em" },
  ".cm-completionSection": { color: "var(--fg-muted)", borderBottomColor: "var(--border)" },
  ".cm-diagnostic-error": { borderLeftColor: "var(--bad)" },
});

/** Offers past queries that match what is typed so far (the whole text before the cursor). */
function historyCompletion(context: CompletionContext): CompletionResult | null {
  const typed = context.state.sliceDoc(0, context.pos);
  if (!context.explicit && typed.trim().length < 2) return null;
  const options = loadHistory()
    .filter((q) => q !== typed)
    .map((q) => ({ label: q, type: "text", section: "Query history", boost: -50 }));
  return options.length ? { from: 0, options } : null;
}

/** One PromQL extension per editor: its completion client caches per page. */
function promql(): Extension {
  return new PromQLExtension()
    .setComplete({
      remote: {
        // The client appends /api/v1/...; the page may live under a prefix.
        url: `${window.location.origin}${pathPrefix}`,
        cache: { maxAge: 5 * 60 * 1000 },
      },
    })
    .asExtension();
}

export function editorExtensions(onRun: () => void, onChange: (text: string) => void): Extension[] {
  return [
    highlightSpecialChars(),
    history(),
    drawSelection(),
    bracketMatching(),
    closeBrackets(),
    autocompletion(),
    EditorView.lineWrapping,
    placeholder("Expression (press Shift+Enter for newlines)"),
    syntaxHighlighting(highlight),
    theme,
    promql(),
    EditorState.languageData.of(() => [{ autocomplete: historyCompletion }]),
    // Above the default keymap (Enter = newline) but below completion's (Enter = accept).
    Prec.high(
      keymap.of([
        { key: "Enter", run: () => (onRun(), true) },
        { key: "Shift-Enter", run: insertNewlineAndIndent },
      ]),
    ),
    keymap.of([...closeBracketsKeymap, ...defaultKeymap, ...historyKeymap, ...completionKeymap, ...lintKeymap]),
    EditorView.updateListener.of((u) => {
      if (u.docChanged) onChange(u.state.doc.toString());
    }),
  ];
}
