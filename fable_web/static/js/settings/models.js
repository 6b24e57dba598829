// Settings → Models (admins): the LLM server's models (widgets/models.js).
import { modelsCard } from "../widgets/models.js";

export function render(panel) {
  panel.append(modelsCard());
}
