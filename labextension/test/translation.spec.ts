import { lessonTrans, viewLang } from '../src/lessonTrans';

describe("a view's labels in its lesson's language", () => {
  it("speak the language a view's JSON names, without JupyterLab's translator", () => {
    expect(lessonTrans('ko')?.__('Reset view')).toBe('보기 초기화');
    expect(lessonTrans('zh')?.__('Reset view')).toBe('重置视图');
    expect(lessonTrans('ru')?.__('Reset view')).toBe('Сбросить вид');
  });

  it('take the plural form of the language and fill the placeholders', () => {
    const ru = lessonTrans('ru');
    expect([1, 3, 7].map(n => ru?._n('%1 node', '%1 nodes', n))).toEqual([
      '1 узел',
      '3 узла',
      '7 узлов'
    ]);
  });

  it('leave an untranslated message in English', () => {
    expect(lessonTrans('ko')?.__('no such label %1', 'x')).toBe('no such label x');
    expect(lessonTrans('ko')?._n('%1 thing', '%1 things', 2)).toBe('2 things');
  });

  it('are none for English lessons and unknown languages (JupyterLab decides)', () => {
    expect([lessonTrans(undefined), lessonTrans('en'), lessonTrans('fr')]).toEqual([
      null,
      null,
      null
    ]);
  });

  it("read the language from the view's JSON", () => {
    expect(viewLang({ nodes: [], lang: 'ko' })).toBe('ko');
    expect(viewLang({ nodes: [] })).toBeUndefined();
    expect(viewLang(null)).toBeUndefined();
  });
});
