// The new-run form (#run-form). Element ids are fixed: browser tests drive them.
import { api } from "./api";
import { clear, errorBox, errorMessage, h } from "./dom";
import { fmtBytes } from "./format";
import type { ArmSettings, ModelInfo, RunRequest, TextInfo } from "./types";

const CACHE_TYPES = ["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl"];
const FLASH = ["auto", "on", "off"];

function select(id: string, options: [value: string, label: string][], selected = ""): HTMLSelectElement {
  const s = h("select", { id, name: id });
  for (const [value, label] of options) s.append(h("option", { value, selected: value === selected }, label));
  return s;
}

function numberInput(id: string, value: number, min: number): HTMLInputElement {
  return h("input", { id, name: id, type: "number", min, step: 1, value });
}

function field(label: string, control: HTMLElement): HTMLElement {
  return h("label", { class: "field", for: control.id }, h("span", { class: "field-label" }, label), control);
}

function settingsFields(arm: "a" | "b"): { el: HTMLElement; read: () => ArmSettings } {
  const ctk = select(`${arm}-ctk`, CACHE_TYPES.map((t) => [t, t]), "f16");
  const ctv = select(`${arm}-ctv`, CACHE_TYPES.map((t) => [t, t]), "f16");
  const fa = select(`${arm}-fa`, FLASH.map((t) => [t, t]), "auto");
  const ub = numberInput(`${arm}-ub`, 512, 1);
  const t = numberInput(`${arm}-t`, 0, 0);
  return {
    el: h("div", { class: "settings-row" }, field("K cache", ctk), field("V cache", ctv), field("flash attn", fa), field("ubatch", ub), field("threads (0 = default)", t)),
    read: () => ({ ctk: ctk.value, ctv: ctv.value, fa: fa.value, ub: Number(ub.value) || 512, t: Number(t.value) || 0 }),
  };
}

export function runForm(models: ModelInfo[], texts: TextInfo[], quantTypes: string[], onStarted: (id: string | number) => void): HTMLElement {
  const modelOpts: [string, string][] = models.map((m) => [m.path, m.name && m.name !== m.path ? `${m.name} (${m.path})` : m.path]);
  const armA = select("arm-a", [["", "— choose a model —"], ...modelOpts], models[0]?.path ?? "");
  const armB = select("arm-b", [["", "— none: B = A quantized —"], ...modelOpts]);
  const defaultQuant = quantTypes.includes("Q4_K_M") ? "Q4_K_M" : (quantTypes[0] ?? "");
  const bQuant = select("b-quant", [["", "— none: B is a model —"], ...quantTypes.map((q): [string, string] => [q, q])], defaultQuant);
  // B is one or the other: picking one clears the other.
  armB.addEventListener("change", () => {
    if (armB.value) bQuant.value = "";
  });
  bQuant.addEventListener("change", () => {
    if (bQuant.value) armB.value = "";
  });
  const sa = settingsFields("a");
  const sb = settingsFields("b");

  const textFile = select("text-file", [["", "— paste text below —"], ...texts.map((t): [string, string] => [t.path, `${t.path} (${fmtBytes(t.size)})`])]);
  const text = h("textarea", { id: "text", name: "text", rows: 6, placeholder: "Paste the text to score here, or choose a text file above." });
  const syncText = () => {
    text.disabled = textFile.value !== "";
  };
  textFile.addEventListener("change", syncText);

  const chunk = numberInput("chunk", 128, 2);
  const maxChunks = numberInput("max-chunks", 4, 1);
  const transplants = h("input", { type: "checkbox", id: "transplants", name: "transplants" });
  const components = h("input", { type: "checkbox", id: "components", name: "components" });
  const submit = h("button", { type: "submit", id: "run-submit" }, "Run");
  const feedback = h("div", { id: "run-feedback" });

  const form = h(
    "form",
    { id: "run-form", class: "run-form", novalidate: true },
    h("fieldset", null, h("legend", null, "Arm A"), field("model", armA), sa.el),
    h("fieldset", null, h("legend", null, "Arm B"), h("div", { class: "settings-row" }, field("model", armB), h("span", { class: "or" }, "or"), field("B = A quantized to", bQuant)), sb.el),
    h("fieldset", null, h("legend", null, "Text"), field("text file", textFile), text),
    h(
      "fieldset",
      null,
      h("legend", null, "Run"),
      h(
        "div",
        { class: "settings-row" },
        field("chunk (tokens)", chunk),
        field("max chunks", maxChunks),
        h("label", { class: "check" }, transplants, " transplants"),
        h("label", { class: "check" }, components, " components"),
      ),
    ),
    h("div", { class: "submit-row" }, submit, feedback),
  );

  const fail = (msg: string) => {
    clear(feedback);
    feedback.append(errorBox(msg));
  };

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!armA.value) return fail("Choose arm A's model.");
    if (!armB.value && !bQuant.value) return fail("Choose arm B: a model, or a quantization type for A.");
    if (!textFile.value && !text.value.trim()) return fail("Choose a text file or paste some text.");
    const req: RunRequest = {
      a: armA.value,
      b: armB.value,
      b_quant: armB.value ? "" : bQuant.value,
      a_settings: sa.read(),
      b_settings: sb.read(),
      text: textFile.value ? "" : text.value,
      text_file: textFile.value,
      chunk: Math.trunc(Number(chunk.value)) || 128,
      max_chunks: Math.trunc(Number(maxChunks.value)) || 4,
      transplants: transplants.checked,
      components: components.checked,
    };
    submit.disabled = true;
    clear(feedback);
    feedback.append(h("span", { class: "muted" }, "Submitting…"));
    try {
      const { id } = await api.startRun(req);
      clear(feedback);
      feedback.append(h("span", { class: "ok-text" }, `Run #${id} queued.`));
      onStarted(id);
    } catch (e) {
      fail(errorMessage(e));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
