// The expression input: a CodeMirror editor owned by this component (uncontrolled).
import { useEffect, useRef } from "preact/hooks";
import { EditorView } from "@codemirror/view";
import { EditorState } from "@codemirror/state";
import { editorExtensions } from "./editorSetup";

interface Props {
  initial: string;
  /** Set to the editor while mounted, for the panel's Format and metric explorer actions. */
  viewRef: { current: EditorView | null };
  onChange: (text: string) => void;
  onRun: () => void;
}

export function PromQLEditor({ initial, viewRef, onChange, onRun }: Props) {
  const host = useRef<HTMLDivElement>(null);
  // The editor is built once; the latest callbacks are read through refs.
  const callbacks = useRef({ onChange, onRun });
  callbacks.current = { onChange, onRun };

  useEffect(() => {
    const view = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: initial,
        extensions: editorExtensions(
          () => callbacks.current.onRun(),
          (text) => callbacks.current.onChange(text),
        ),
      }),
    });
    view.contentDOM.setAttribute("aria-label", "PromQL expression");
    viewRef.current = view;
    return () => {
      viewRef.current = null;
      view.destroy();
    };
  }, []);

  return <div class="promql-editor" ref={host} />;
}
