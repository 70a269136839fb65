/**
 * Names shared by the plugins: the command IDs.
 */

/** The command IDs this extension adds. */
export namespace CommandIDs {
  /** Open the first lesson (or the lessons folder); args `{lang: 'ko'}` for a translation. */
  export const openLessons = 'tfteach:open-lessons';
  /** Show the cluster panel in the left sidebar. */
  export const showClusters = 'tfteach:show-clusters';
}
