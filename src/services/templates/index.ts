// The templates area: templates kept in versions, published or draft, with Liquid merge tags; rendered for
// previews and for sends by template_id; the visual builder (blocks compiled with mjml) and presets. Imports the platform area only; the sending area imports it.
// What other areas, the adapters and appliance.ts may call; a file of another area imports this index only.
export {
  BUILDER_TYPES,
  createTemplate,
  deleteTemplate,
  duplicateTemplate,
  getTemplate,
  getVersion,
  listPresets,
  listTemplates,
  listVersions,
  renderTemplate,
  restoreVersion,
  setPublished,
  updateTemplate,
  useTemplatePreset,
  templateForSend,
  type RenderedForSend,
  type SendTemplate,
  type Template,
  type TemplateVersion,
} from './templates.js';
export { parsePart, renderPart, type ParsedPart, type Part } from './merge-tags.js';
