/**
 * The tfteach icon: three devices joined by transfers.
 */
import { LabIcon } from '@jupyterlab/ui-components';

const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="2" y="2" width="8" height="6" rx="1.5"/>
    <rect x="14" y="2" width="8" height="6" rx="1.5"/>
    <rect x="8" y="16" width="8" height="6" rx="1.5"/>
    <path d="M6 8v3h12V8h-1.6v1.6H7.6V8z"/>
    <path d="M11.2 10.5h1.6V16h-1.6z"/>
  </g>
</svg>`;

export const tfteachIcon = new LabIcon({ name: 'tfteach:icon', svgstr: svg });
