// The expression input: a CodeMirror editor owned by this component (uncontrolled).
import { useEffect, useRef } from "preact/hooks";
import { EditorView } from "@codemirror/view";
import { EditorState } from "@codemirror/state";
import { editorExtensions } from "./editorSetup";

interface Props {
  initial: string;
  onChange: (text: string) => void;
  onRun: () => void;
}

export function PromQLEditor({ initial, onChange, onRun }: Props) {
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
    return () => view.destroy();
  }, []);

  return <div class="promql-editor" ref={host} />;
}
