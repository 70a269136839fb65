/**
 * The tfteach palette, shared with the Python views. Generated from
 * tfteach/notebook/palette.py: do not edit; run
 * python -m tfteach.notebook.palette > labextension/src/palette.ts
 */
export const PALETTE_DATA = {
  deviceFills: [
    '#56B4E9',
    '#E69F00',
    '#009E73',
    '#CC79A7',
    '#0072B2',
    '#D55E00',
    '#F0E442',
    '#999999',
    '#8DD3C7',
    '#BEBADA',
    '#FB8072',
    '#80B1D3',
    '#FDB462',
    '#B3DE69'
  ],
  deviceLabels: [
    '#111111',
    '#111111',
    '#111111',
    '#111111',
    '#FFFFFF',
    '#111111',
    '#111111',
    '#111111',
    '#111111',
    '#111111',
    '#111111',
    '#111111',
    '#111111',
    '#111111'
  ],
  opFills: ['#E0E0E0', '#B0B0B0', '#808080', '#585858'],
  opLabels: ['#111111', '#111111', '#111111', '#FFFFFF'],
  opHatches: ['solid', 'stripes', 'dots'],
  transfer: '#D0402F',
  feedback: { error: '#C0392B', success: '#1E8449', note: '#2E86C1', warning: '#D68910' }
};
